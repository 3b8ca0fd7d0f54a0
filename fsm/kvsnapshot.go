package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// kvFile is the namespace in a snapshot (version 5 on): the keys in
// order, the namespace's index, the sequential counter, and the history
// with the index up to which it was compacted. The ephemeral keys'
// links to their sessions, and what each token owns, follow from the
// keys (their owners from version 7 on).
type kvFile struct {
	KVIndex     uint64        `json:"kv_index,omitempty"`
	KVSeq       uint64        `json:"kv_seq,omitempty"`
	KVs         []KV          `json:"kvs,omitempty"`
	KVEvents    []storedEvent `json:"kv_events,omitempty"`
	KVCompacted uint64        `json:"kv_compacted,omitempty"`
}

// storedEvent is one event of the history in a snapshot, with the wall
// time of its entry, which retention goes by.
type storedEvent struct {
	Index uint64    `json:"index"`
	At    time.Time `json:"at"`
	Type  EventType `json:"type"`
	KV    *KV       `json:"kv"`
	Prev  *KV       `json:"prev,omitempty"`
}

// owned reports whether a key or a record of the history has an owner.
func (f *kvFile) owned() bool {
	for _, kv := range f.KVs {
		if kv.Owner != "" {
			return true
		}
	}
	for _, e := range f.KVEvents {
		if e.KV.Owner != "" || (e.Prev != nil && e.Prev.Owner != "") {
			return true
		}
	}
	return false
}

func (f *kvFile) empty() bool {
	return f.KVIndex == 0 && f.KVSeq == 0 && f.KVs == nil && f.KVEvents == nil && f.KVCompacted == 0
}

// load fills the empty namespace of st from a snapshot, refusing what
// the entries could not have produced.
func (k *kvStore) load(f kvFile, applied uint64, sessions *cowMap[Session]) error {
	if f.KVIndex > applied || f.KVCompacted > f.KVIndex {
		return fmt.Errorf("index %d, compacted %d, applied %d out of order", f.KVIndex, f.KVCompacted, applied)
	}
	k.index, k.seq, k.hist.compacted = f.KVIndex, f.KVSeq, f.KVCompacted
	var last []byte
	for i := range f.KVs {
		kv := &f.KVs[i]
		if err := validKV(kv, 1, f.KVIndex); err != nil {
			return fmt.Errorf("key %q: %w", kv.Key, err)
		}
		if i > 0 && bytes.Compare(last, kv.Key) >= 0 {
			return fmt.Errorf("key %q: out of order or repeated", kv.Key)
		}
		if kv.Session != "" && !sessions.has(kv.Session) {
			return fmt.Errorf("key %q: unknown session %q", kv.Key, kv.Session)
		}
		last = kv.Key
		k.tree.ReplaceOrInsert(kv)
		k.bytes += len(kv.Key) + len(kv.Value)
		if kv.Session != "" {
			addRef(k.owned, kv.Session, string(kv.Key))
		}
		k.charge(kv, 1)
	}
	prev := f.KVCompacted + 1
	for _, e := range f.KVEvents {
		if e.Index < prev || e.Index > f.KVIndex || !encodable(e.At) {
			return fmt.Errorf("event of index %d out of order (history after %d, index %d) or at %v", e.Index, f.KVCompacted, f.KVIndex, e.At)
		}
		if err := validEvent(e); err != nil {
			return fmt.Errorf("event of index %d: %w", e.Index, err)
		}
		prev = e.Index
		kv := e.KV
		// The event of a key's last change shares its record, as it
		// did before the snapshot.
		if cur, ok := k.get(kv.Key); ok && e.Type == EventPut && cur.ModifyIndex == kv.ModifyIndex && cur.Version == kv.Version {
			kv = cur
		}
		k.hist.events.ReplaceOrInsert(&histEvent{n: k.hist.next, index: e.Index, at: e.At.UTC(), typ: e.Type, kv: kv, prev: e.Prev})
		k.hist.next++
	}
	return nil
}

// validKV checks a record whose last change is at most index, and not
// below least.
func validKV(kv *KV, least, index uint64) error {
	switch {
	case kv == nil:
		return errors.New("no record")
	case checkKey(kv.Key) != nil || len(kv.Value) > MaxValueLen || len(kv.Owner) > maxAccessorLen:
		return errors.New("key, value or owner out of bounds")
	case kv.CreateIndex == 0 || kv.CreateIndex > kv.ModifyIndex || kv.ModifyIndex < least || kv.ModifyIndex > index || kv.Version == 0:
		return fmt.Errorf("indexes %d, %d or version %d out of order", kv.CreateIndex, kv.ModifyIndex, kv.Version)
	}
	if len(kv.Value) == 0 {
		kv.Value = nil
	}
	return nil
}

func validEvent(e storedEvent) error {
	if e.KV == nil || checkKey(e.KV.Key) != nil {
		return errors.New("no key")
	}
	if e.Prev != nil {
		if err := validKV(e.Prev, 1, e.Index); err != nil {
			return fmt.Errorf("previous record: %w", err)
		}
		if !bytes.Equal(e.Prev.Key, e.KV.Key) {
			return errors.New("previous record of another key")
		}
	}
	switch e.Type {
	case EventPut:
		return validKV(e.KV, e.Index, e.Index)
	case EventDelete:
		kv := e.KV
		if e.Prev == nil || kv.ModifyIndex != e.Index || kv.Value != nil || kv.CreateIndex != 0 || kv.Version != 0 || kv.Session != "" || kv.Flags != 0 || kv.Owner != "" {
			return errors.New("delete without the record deleted, or with more than its key and index")
		}
		return nil
	}
	return fmt.Errorf("type %q", e.Type)
}
