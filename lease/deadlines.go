package lease

import (
	"container/heap"
	"time"

	"github.com/lockd/lockd/fsm"
)

// deadlines is a leader term's table of session deadlines, on the
// leader's monotonic clock: a map by session id and a min-heap by
// deadline of the sessions not yet handed to expire. A keepalive moves one
// deadline and restores the heap in O(log n); a sweep pops only the
// sessions that are due. The leader term's mutex guards it.
type deadlines struct {
	byID map[string]*deadline
	due  deadlineHeap
	// handed holds the sessions handed to expire whose expiry has not
	// been committed yet: no keepalive revives them, and every sweep lists
	// them again until forget drops them, so a failed expiry is retried.
	handed map[string]*deadline
}

type deadline struct {
	id  string
	end time.Time
	pos int // index in the heap; -1 once handed to expire
}

func newDeadlines() deadlines {
	return deadlines{byID: make(map[string]*deadline), handed: make(map[string]*deadline)}
}

// fill returns a table of the given sessions, each with the deadline end
// gives it, built in O(n).
func fill(sessions []fsm.Session, end func(fsm.Session) time.Time) deadlines {
	d := newDeadlines()
	d.due = make(deadlineHeap, 0, len(sessions))
	for _, s := range sessions {
		e := &deadline{id: s.ID, end: end(s), pos: len(d.due)}
		d.byID[s.ID] = e
		d.due = append(d.due, e)
	}
	heap.Init(&d.due)
	return d
}

func (d *deadlines) len() int { return len(d.byID) }

func (d *deadlines) has(id string) bool {
	_, ok := d.byID[id]
	return ok
}

// track gives a session the deadline end, or a later one it already has;
// a session handed to expire keeps that state.
func (d *deadlines) track(id string, end time.Time) {
	e, ok := d.byID[id]
	switch {
	case !ok:
		e = &deadline{id: id, end: end}
		d.byID[id] = e
		heap.Push(&d.due, e)
	case e.pos >= 0 && end.After(e.end):
		e.end = end
		heap.Fix(&d.due, e.pos)
	}
}

// extend moves a session's deadline to end, never earlier, if its
// deadline has not passed by now. It refuses (false) a session it does not
// know, one whose deadline has passed, and one handed to expire.
func (d *deadlines) extend(id string, now, end time.Time) bool {
	e, ok := d.byID[id]
	if !ok || e.pos < 0 || !now.Before(e.end) {
		return false
	}
	if end.After(e.end) {
		e.end = end
		heap.Fix(&d.due, e.pos)
	}
	return true
}

// popDue hands to expire up to limit sessions whose deadline is not after
// now, earliest first, and appends their ids to out.
func (d *deadlines) popDue(now time.Time, limit int, out []string) []string {
	for range limit {
		if len(d.due) == 0 || now.Before(d.due[0].end) {
			break
		}
		e := heap.Pop(&d.due).(*deadline)
		d.handed[e.id] = e
		out = append(out, e.id)
	}
	return out
}

// handedIDs appends the ids of the sessions handed to expire to out.
func (d *deadlines) handedIDs(out []string) []string {
	for id := range d.handed {
		out = append(out, id)
	}
	return out
}

// ids appends to out the ids of the sessions at positions [from,
// from+limit) of the heap and returns where the next call starts; the call
// that reaches the heap's end also appends the sessions handed to expire,
// and returns -1. Positions change as deadlines move, so a walk whose
// calls release the lock in between may miss or repeat a session.
func (d *deadlines) ids(from, limit int, out []string) ([]string, int) {
	if from < len(d.due) {
		end := min(from+limit, len(d.due))
		for _, e := range d.due[from:end] {
			out = append(out, e.id)
		}
		if end < len(d.due) {
			return out, end
		}
	}
	return d.handedIDs(out), -1
}

// forget drops a session from the table.
func (d *deadlines) forget(id string) {
	e, ok := d.byID[id]
	if !ok {
		return
	}
	delete(d.byID, id)
	delete(d.handed, id)
	if e.pos >= 0 {
		heap.Remove(&d.due, e.pos)
	}
}

// deadlineHeap orders sessions by deadline, the earliest on top, and keeps
// each one's position for heap.Fix and heap.Remove.
type deadlineHeap []*deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}

func (h *deadlineHeap) Push(x any) {
	e := x.(*deadline)
	e.pos = len(*h)
	*h = append(*h, e)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.pos = -1
	return e
}
