package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// ErrFutureRevision is returned by RangeAt for a revision past the
// applied index: the state there is not known yet.
var ErrFutureRevision = errors.New("fsm: revision after the applied index")

// RangeAt returns the records of the range [start, end) (a range as TxnOp
// names one) as they were right after entry rev was applied, in key order,
// without values if keysOnly, and the applied index the read was made at.
// rev 0 is the applied index: the state now. A revision is any Raft index,
// not only one that changed a key: the state "at" an entry that changed
// no key is that of the last one before it that did.
//
// A past revision is answered from the history: the records now, with
// every event after rev undone, newest first (an event carries the record
// before it). So it is exact for every rev the history reaches back to,
// and refused with a *CompactedError below that, as Events refuses; a rev
// above the applied index is refused with ErrFutureRevision. The cost is
// that of the range plus the events since rev.
func (f *FSM) RangeAt(start, end []byte, rev uint64, keysOnly bool) (kvs []KV, applied uint64, err error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	kvs, err = f.st.kv.rangeAt(start, end, rev, keysOnly, f.st.applied)
	return kvs, f.st.applied, err
}

// RangeRead is one read of a read-only transaction (ReadTxn): the range
// [Key, End) as TxnOp names one, at revision Rev (0: now), as RangeAt
// reads it.
type RangeRead struct {
	Key, End []byte
	Rev      uint64
	KeysOnly bool
}

// ReadTxn answers a transaction that only reads, from one state and
// without an entry: whether every compare holds (as an OpTxn's compares
// hold), the records of each read of the branch that runs (success's if
// they hold, failure's if not) and the applied index it read at. A
// malformed compare is refused with ErrBadCommand, a revision out of the
// history's reach as RangeAt refuses it.
func (f *FSM) ReadTxn(cmps []Compare, success, failure []RangeRead) (succeeded bool, results [][]KV, applied uint64, err error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k := f.st.kv
	applied = f.st.applied
	succeeded = true
	for i, c := range cmps {
		if err := c.check(); err != nil {
			return false, nil, applied, refuse("a read-only transaction: compare %d: %v", i, err).Err
		}
		kv, _ := k.get(c.Key)
		if succeeded && !c.holds(kv) {
			succeeded = false
		}
	}
	reads := success
	if !succeeded {
		reads = failure
	}
	for _, r := range reads {
		kvs, err := k.rangeAt(r.Key, r.End, r.Rev, r.KeysOnly, applied)
		if err != nil {
			return false, nil, applied, err
		}
		results = append(results, kvs)
	}
	return succeeded, results, applied, nil
}

// rangeAt is RangeAt's read, under the FSM's read lock.
func (k *kvStore) rangeAt(start, end []byte, rev uint64, keysOnly bool, applied uint64) (kvs []KV, err error) {
	switch {
	case rev > applied:
		return nil, fmt.Errorf("%w: revision %d, applied %d", ErrFutureRevision, rev, applied)
	case rev != 0 && rev < k.hist.compacted:
		return nil, &CompactedError{Oldest: k.hist.compacted}
	}
	keep := func(kv *KV) KV {
		c := kv.clone()
		if keysOnly {
			c.Value = nil
		}
		return c
	}
	if rev == 0 || rev >= k.index {
		k.span(start, end, 0, func(kv *KV) { kvs = append(kvs, keep(kv)) })
		return kvs, nil
	}
	// The keys of the range now, then the events after rev undone.
	at := map[string]*KV{}
	k.span(start, end, 0, func(kv *KV) { at[string(kv.Key)] = kv })
	k.hist.events.Descend(func(e *histEvent) bool {
		if e.index <= rev {
			return false
		}
		if inRange(e.kv.Key, start, end) {
			if e.prev == nil {
				delete(at, string(e.kv.Key))
			} else {
				at[string(e.kv.Key)] = e.prev
			}
		}
		return true
	})
	kvs = make([]KV, 0, len(at))
	for _, kv := range at {
		kvs = append(kvs, keep(kv))
	}
	slices.SortFunc(kvs, func(a, b KV) int { return bytes.Compare(a.Key, b.Key) })
	return kvs, nil
}

// Compacted returns the index up to which the history was compacted:
// RangeAt and Events answer after it, never before.
func (f *FSM) Compacted() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.kv.hist.compacted
}
