package fsm

import (
	"container/heap"
	"maps"
	"slices"
)

// Session returns the session with the given id.
func (f *FSM) Session(id string) (Session, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.st.sessions.get(id)
	return s, ok
}

// Sessions returns every session, sorted by ID.
func (f *FSM) Sessions() []Session {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.sessions.sortedValues()
}

// SessionCount returns how many sessions exist.
func (f *FSM) SessionCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.sessions.len()
}

// AllSessions returns every session in no particular order: Sessions
// without the cost of sorting.
func (f *FSM) AllSessions() []Session {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Session, 0, f.st.sessions.len())
	for _, s := range f.st.sessions.all() {
		out = append(out, s)
	}
	return out
}

// SessionsAfter returns, sorted by ID, the first limit sessions whose IDs
// sort after the given one ("" for the first page), and whether more
// follow. It costs a pass over the sessions but no sort of them all.
func (f *FSM) SessionsAfter(after string, limit int) (page []Session, more bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids, more := firstAfter(f.st.sessions, after, limit)
	page = make([]Session, len(ids))
	for i, id := range ids {
		page[i], _ = f.st.sessions.get(id)
	}
	return page, more
}

// SessionHolds returns the names of the locks and of the elections the
// session holds, each sorted. Both are empty for an unknown session.
func (f *FSM) SessionHolds(id string) (locks, elections []string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return refs(f.st.locks.held, id), refs(f.st.elections.held, id)
}

// Lock returns the named lock. A lock that does not exist reads as free,
// with the ModifyIndex of the last change to any lock, so that a blocking
// query on it never sees the index go backwards.
func (f *FSM) Lock(name string) Lock {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.locks.read(name)
}

// Locks returns every existing lock, sorted by name.
func (f *FSM) Locks() []Lock {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.locks.list()
}

// LocksAfter returns, sorted by name, the first limit existing locks whose
// names sort after the given one, and whether more follow.
func (f *FSM) LocksAfter(after string, limit int) ([]Lock, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.locks.listAfter(after, limit)
}

// ElectionsAfter is LocksAfter for elections.
func (f *FSM) ElectionsAfter(after string, limit int) ([]Lock, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.elections.listAfter(after, limit)
}

// Election returns the named election; a missing one reads as Lock does.
func (f *FSM) Election(name string) Lock {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.elections.read(name)
}

// Elections returns every existing election, sorted by name.
func (f *FSM) Elections() []Lock {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.elections.list()
}

// LocksIndex returns the index of the last change to any lock, deletions
// included.
func (f *FSM) LocksIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.locks.index
}

// ElectionsIndex returns the index of the last change to any election,
// deletions included.
func (f *FSM) ElectionsIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.elections.index
}

// Check reports whether token belongs to a current holder of the named lock
// (Chubby's CheckSequencer). It is only as fresh as this replica's state.
func (f *FSM) Check(name string, token uint64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.locks.check(name, token)
}

// CheckElection reports whether token is the current leader's token of the
// named election.
func (f *FSM) CheckElection(name string, token uint64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.elections.check(name, token)
}

// Members returns the member table, sorted by ID.
func (f *FSM) Members() []Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return sortedValues(f.st.members)
}

// Timers returns every pending lock-delay and wait, locks before
// elections, each in name order. The leader runs a timer of the given
// length for each from when it first sees it, and proposes OpTimersDue
// naming those that ran out; the FSM itself never acts on time.
func (f *FSM) Timers() []Timer {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := f.st.elections.timers(f.st.locks.timers(nil))
	f.unsafe.shortenLockDelays(out)
	return out
}

func (s *space) read(name string) Lock {
	if l, ok := s.objs.get(name); ok {
		return copyLock(l)
	}
	return Lock{Name: name, ModifyIndex: s.index}
}

func (s *space) list() []Lock {
	out := make([]Lock, 0, s.objs.len())
	for _, l := range s.objs.sortedValues() {
		out = append(out, copyLock(l))
	}
	return out
}

func (s *space) listAfter(after string, limit int) ([]Lock, bool) {
	names, more := firstAfter(s.objs, after, limit)
	out := make([]Lock, len(names))
	for i, name := range names {
		l, _ := s.objs.get(name)
		out[i] = copyLock(l)
	}
	return out, more
}

func (s *space) check(name string, token uint64) bool {
	l, ok := s.objs.get(name)
	return ok && slices.ContainsFunc(l.Holders, func(h Holder) bool { return h.Token == token })
}

// copyLock returns l with slices of its own, so callers cannot reach into
// the state.
func copyLock(l *Lock) Lock {
	c := *l
	c.Holders = slices.Clone(l.Holders)
	c.Waiters = slices.Clone(l.Waiters)
	c.Slots = slices.Clone(l.Slots)
	return c
}

// sortedValues returns m's values in key order.
func sortedValues[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// firstAfter returns, sorted, the first limit keys of m that sort after
// after, and whether m has more such keys. It makes one pass over m and
// keeps the page in a max-heap, so it costs O(len(m) log limit) time and
// O(limit) memory, whatever the size of m. A limit below 1 is taken as 1.
func firstAfter[V any](m *cowMap[V], after string, limit int) ([]string, bool) {
	limit = max(limit, 1)
	h := make(maxHeap, 0, min(limit, m.len()))
	more := false
	for k := range m.all() {
		switch {
		case k <= after:
		case len(h) < limit:
			heap.Push(&h, k)
		case k < h[0]:
			h[0] = k
			heap.Fix(&h, 0)
			more = true
		default:
			more = true
		}
	}
	slices.Sort(h)
	return h, more
}

// maxHeap is a heap of strings with the greatest on top.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
