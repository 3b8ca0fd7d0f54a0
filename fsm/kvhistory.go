package fsm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/google/btree"
)

// History. Every put and delete of a key is an event, stamped with the
// index of its entry; the events of one entry share that index and are
// kept, compacted and read together, never split. The history keeps at
// least the last MinEvents events and every event whose entry's wall time
// (Command.Now) is less than MinAge before the wall time of the newest
// entry that added events, and never more than MaxEvents. The wall times
// come from the log, so every replica drops the same events at the same
// entry: they decide retention only, never a grant or a refusal.

// ErrCompacted is returned when the history no longer reaches back to the
// index asked for, as a *CompactedError that wraps it.
var ErrCompacted = errors.New("fsm: history compacted")

// CompactedError wraps ErrCompacted. Oldest is the lowest index after
// which events can still be read.
type CompactedError struct {
	Oldest uint64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%v: events after index %d are the oldest kept", ErrCompacted, e.Oldest)
}

// Unwrap returns ErrCompacted.
func (e *CompactedError) Unwrap() error { return ErrCompacted }

// HistoryLimits bound the history (see SetHistoryLimits).
type HistoryLimits struct {
	MinEvents int
	MinAge    time.Duration
	MaxEvents int
}

// DefaultHistoryLimits are the limits of a new FSM: at least the last
// 10,000 events and 5 minutes, at most 1,000,000 events.
func DefaultHistoryLimits() HistoryLimits {
	return HistoryLimits{MinEvents: 10_000, MinAge: 5 * time.Minute, MaxEvents: 1_000_000}
}

// SetHistoryLimits sets the bounds of the history. Every replica must use
// the same, or their histories (never their keys) differ; so it may only
// be called before the first entry is applied or restored, and refuses
// otherwise, as it refuses limits with MinEvents above MaxEvents, a
// MaxEvents below 1 or negative values.
func (f *FSM) SetHistoryLimits(l HistoryLimits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.st.applied != 0:
		return errors.New("fsm: history limits set after entries were applied")
	case l.MinEvents < 0 || l.MinAge < 0 || l.MaxEvents < 1 || l.MinEvents > l.MaxEvents:
		return fmt.Errorf("fsm: history limits %+v", l)
	}
	f.st.kv.hist.limits = l
	return nil
}

// EventType says what an event did.
type EventType string

// Event types.
const (
	EventPut    EventType = "put"
	EventDelete EventType = "delete"
)

// Event is one change of a key. KV is the record after it (for a delete:
// the key and the entry's index as its ModifyIndex), Prev the record
// before it (nil if the key did not exist).
type Event struct {
	Index uint64    `json:"index"`
	Type  EventType `json:"type"`
	KV    KV        `json:"kv"`
	Prev  *KV       `json:"prev,omitempty"`
}

// histEvent is an event as the history keeps it, sharing its records with
// the tree of keys. n numbers the events in the order added.
type histEvent struct {
	n        uint64
	index    uint64
	at       time.Time
	typ      EventType
	kv, prev *KV
}

func lessEvent(a, b *histEvent) bool {
	return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.n, b.n)) < 0
}

func (e *histEvent) event() Event {
	out := Event{Index: e.index, Type: e.typ, KV: e.kv.clone()}
	if e.prev != nil {
		p := e.prev.clone()
		out.Prev = &p
	}
	return out
}

type history struct {
	events *btree.BTreeG[*histEvent]
	next   uint64
	// compacted is the highest index whose events were dropped: reads
	// after a lower index are refused.
	compacted uint64
	limits    HistoryLimits
	// added says the entry being applied added events; now is its wall
	// time.
	added bool
	now   time.Time
}

func newHistory(l HistoryLimits) history {
	return history{events: btree.NewG(kvDegree, lessEvent), limits: l}
}

func (h *history) add(o op, typ EventType, kv, prev *KV) {
	h.events.ReplaceOrInsert(&histEvent{n: h.next, index: o.index, at: o.now, typ: typ, kv: kv, prev: prev})
	h.next++
	h.added, h.now = true, o.now
}

// endEntry runs after every entry: when it added events, it drops the
// oldest entries' events that the limits no longer keep, whole entries
// at a time. An entry that alone has more than MaxEvents events goes too.
func (h *history) endEntry() {
	if !h.added {
		return
	}
	h.added = false
	cutoff := h.now.Add(-h.limits.MinAge)
	for h.events.Len() > 0 {
		front, _ := h.events.Min()
		size := h.groupSize(front.index)
		over := h.events.Len() > h.limits.MaxEvents
		old := h.events.Len()-size >= h.limits.MinEvents && !front.at.After(cutoff)
		if !over && !old {
			return
		}
		for range size {
			h.events.DeleteMin()
		}
		h.compacted = front.index
	}
}

// groupSize counts the events of entry index, the oldest kept.
func (h *history) groupSize(index uint64) int {
	n := 0
	h.events.Ascend(func(e *histEvent) bool {
		if e.index != index {
			return false
		}
		n++
		return true
	})
	return n
}

// EventPage is one page of the history: Events in order, complete per
// index; Next is the index to read after for the next page; More says
// the page stopped at its limit.
type EventPage struct {
	Events []Event
	Next   uint64
	More   bool
}

// read returns the events after index after of the keys in [start, end)
// (a range as TxnOp names one), at least limit of them unless the history
// ends first (a limit below 1 is taken as 1), and never part of an
// entry's. newest is the namespace's index.
func (h *history) read(after uint64, start, end []byte, limit int, newest uint64) (EventPage, error) {
	if after < h.compacted {
		return EventPage{}, &CompactedError{Oldest: h.compacted}
	}
	limit = max(limit, 1)
	page := EventPage{Next: max(after, newest)}
	h.events.AscendGreaterOrEqual(&histEvent{index: after + 1}, func(e *histEvent) bool {
		if n := len(page.Events); n >= limit && page.Events[n-1].Index != e.index {
			page.Next, page.More = page.Events[n-1].Index, true
			return false
		}
		if inRange(e.kv.Key, start, end) {
			page.Events = append(page.Events, e.event())
		}
		return true
	})
	return page, nil
}

// inRange reports whether key lies in the range [start, end) (see TxnOp).
func inRange(key, start, end []byte) bool {
	switch {
	case len(end) == 0:
		return bytes.Equal(key, start)
	case bytes.Compare(key, start) < 0:
		return false
	}
	return isAll(end) || bytes.Compare(key, end) < 0
}
