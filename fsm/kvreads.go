package fsm

import "bytes"

// Get returns the record of key. A key that does not exist reads with ok
// false and the ModifyIndex of the last change to any key, so that a
// blocking query on it never sees the index go backwards.
func (f *FSM) Get(key []byte) (kv KV, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if r, ok := f.st.kv.get(key); ok {
		return r.clone(), true
	}
	return KV{Key: bytes.Clone(key), ModifyIndex: f.st.kv.index}, false
}

// RangePage is one page of a Range: the records in key order (without
// values if keysOnly, none if countOnly); Count, how many KVs holds, or
// with countOnly how many keys the range has after the cursor; More, the
// range has keys past the page, and then Next, the key to pass as after
// for the next page; Index, the namespace's index (KVIndex).
type RangePage struct {
	KVs   []KV
	Count int
	More  bool
	Next  []byte
	Index uint64
}

// Range returns the keys of the range [start, end) (a range as TxnOp
// names one: end empty for the one key start, {0} for every key from
// start on) that sort after after (nil for the first page), at most limit
// of them (0 for no limit). A page costs O(log n + limit), whatever the
// number of keys; countOnly costs a pass over the range.
func (f *FSM) Range(start, end, after []byte, limit int, keysOnly, countOnly bool) RangePage {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k := f.st.kv
	page := RangePage{Index: k.index}
	if len(end) == 0 {
		end = append(bytes.Clone(start), 0) // just start
	}
	if after != nil && bytes.Compare(after, start) >= 0 {
		start = append(bytes.Clone(after), 0) // the first key after after
	}
	if !isAll(end) && bytes.Compare(start, end) >= 0 {
		return page
	}
	page.KVs, page.Count, page.More = k.read(start, end, max(limit, 0), keysOnly, countOnly)
	if page.More {
		page.Next = bytes.Clone(page.KVs[len(page.KVs)-1].Key)
	}
	return page
}

// KVIndex returns the index of the last change to any key, deletions
// included.
func (f *FSM) KVIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.kv.index
}

// Events returns the events after index after of the keys in [key, end)
// (a range as TxnOp names one), in order: at least limit of them (a limit
// below 1 is taken as 1) unless the history ends first, the events of one
// entry all or none. When the history no longer reaches back to after, it
// returns a *CompactedError naming the oldest index it can still read
// after. A caller that got a page without More watches the key's or the
// prefix's topic, then reads again after page.Next.
func (f *FSM) Events(after uint64, key, end []byte, limit int) (EventPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.kv.hist.read(after, key, end, limit, f.st.kv.index)
}

// KeysOf returns the keys session owns (its ephemeral keys), sorted.
func (f *FSM) KeysOf(session string) [][]byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.kv.keysOf(session)
}

// KVCounts is the size of the namespace, for metrics: Keys, the bytes of
// their keys and values, the events the history keeps, and the index up
// to which it was compacted (Events refuses to read after a lower one).
type KVCounts struct {
	Keys, Bytes, Events int
	Compacted           uint64
}

// KVCounts returns the counts of the namespace, at no cost that grows
// with it.
func (f *FSM) KVCounts() KVCounts {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k := f.st.kv
	return KVCounts{Keys: k.tree.Len(), Bytes: k.bytes, Events: k.hist.events.Len(), Compacted: k.hist.compacted}
}

// RangeFirst returns, from one state, the first limit records of the
// range [start, end) (a range as TxnOp names one) in key order (every one
// with limit 0, none with countOnly; without values if keysOnly), the
// number of keys in the whole range, and the applied index. It copies
// only the records it returns: a small page of a large range costs one
// pass over the range's keys to count them, not a copy of them all.
func (f *FSM) RangeFirst(start, end []byte, limit int, keysOnly, countOnly bool) (kvs []KV, count int, applied uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.st.kv.span(start, end, 0, func(kv *KV) {
		count++
		if countOnly || (limit > 0 && len(kvs) >= limit) {
			return
		}
		c := kv.clone()
		if keysOnly {
			c.Value = nil
		}
		kvs = append(kvs, c)
	})
	return kvs, count, f.st.applied
}
