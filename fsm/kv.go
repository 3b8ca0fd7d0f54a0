package fsm

import (
	"bytes"
	"maps"
	"slices"

	"github.com/google/btree"
)

// The namespace of small files: keys and values written by transactions
// (OpTxn, kvtxn.go), with a history of their changes for watches
// (kvhistory.go). Its revisions are Raft indexes: every key records the
// index of the entry that created it and of the one that last changed it.

// Bounds of keys and values. A key is any non-empty byte string; rules
// for names in URL paths belong to the HTTP layer.
const (
	MaxKeyLen   = 1024
	MaxValueLen = 256 << 10
)

// seqDigits is the width of the number a sequential put appends.
const seqDigits = 20

// KV is one key and its value. CreateIndex and ModifyIndex are the
// indexes of the entries that created the key and last changed it;
// Version counts its changes since it was created (1 on create). Session
// is the session whose end deletes the key ("" for none), Flags belongs to
// the client. Owner is the accessor id of the ACL token that wrote the
// key last, whose limits it counts against ("" for none: written while
// ACLs were off, or before keys had owners); see quota.go.
type KV struct {
	Key         []byte `json:"key"`
	Value       []byte `json:"value,omitempty"`
	CreateIndex uint64 `json:"create_index,omitempty"`
	ModifyIndex uint64 `json:"modify_index"`
	Version     uint64 `json:"version,omitempty"`
	Session     string `json:"session,omitempty"`
	Flags       uint64 `json:"flags,omitempty"`
	Owner       string `json:"owner,omitempty"`
}

// size is what a key counts for in bytes: its key and its value.
func (kv *KV) size() int64 { return int64(len(kv.Key) + len(kv.Value)) }

// clone returns a copy of kv with byte slices of its own, so callers
// cannot reach into the state.
func (kv *KV) clone() KV {
	c := *kv
	c.Key = bytes.Clone(kv.Key)
	c.Value = bytes.Clone(kv.Value)
	return c
}

// kvDegree is the degree of the B-trees of keys and of the history.
const kvDegree = 32

func lessKV(a, b *KV) bool { return bytes.Compare(a.Key, b.Key) < 0 }

// kvStore is the namespace. The records in the tree are never changed in
// place: a put stores a new record, so the history and a frozen tree share
// records with the live tree safely, and Clone freezes the tree at a cost
// that does not grow with it (the B-tree copies nodes on write).
type kvStore struct {
	tree *btree.BTreeG[*KV]
	// index is the index of the last change to any key, deletions
	// included, so a missing key reads with a ModifyIndex that never goes
	// backwards.
	index uint64
	// seq is the number the last sequential put appended.
	seq uint64
	// bytes sums the lengths of the keys and values, for metrics.
	bytes int
	// owned maps a session to the keys it owns (ephemeral keys), so that
	// ending it does not scan every key. Rebuilt from the keys on restore.
	owned map[string]map[string]struct{}
	// usage counts the keys each token owns and their bytes (KV.Owner),
	// which its limits bound (quota.go). Rebuilt from the keys on restore.
	usage map[string]KeyUsage
	hist  history
	// touched is the state's list of topics the current entry changed.
	touched *[]Topic
}

func newKVStore(touched *[]Topic) *kvStore {
	return &kvStore{
		tree:    btree.NewG(kvDegree, lessKV),
		owned:   make(map[string]map[string]struct{}),
		usage:   make(map[string]KeyUsage),
		hist:    newHistory(DefaultHistoryLimits()),
		touched: touched,
	}
}

func (k *kvStore) get(key []byte) (*KV, bool) {
	return k.tree.Get(&KV{Key: key})
}

// put stores value under key in entry o, owned by session (none if "")
// and by the token owner (none if ""), and records the event. It returns
// the new record and the one it replaced (nil if none).
func (k *kvStore) put(o op, key, value []byte, flags uint64, session, owner string) (kv, prev *KV) {
	kv = &KV{Key: bytes.Clone(key), Value: bytes.Clone(value), CreateIndex: o.index, ModifyIndex: o.index, Version: 1, Session: session, Flags: flags, Owner: owner}
	if len(kv.Value) == 0 {
		kv.Value = nil // empty and none encode alike; keep them alike
	}
	prev, replaced := k.tree.ReplaceOrInsert(kv)
	if replaced {
		kv.CreateIndex, kv.Version = prev.CreateIndex, prev.Version+1
		k.bytes -= len(prev.Key) + len(prev.Value)
		k.unown(prev)
	} else {
		prev = nil
	}
	k.bytes += len(kv.Key) + len(kv.Value)
	if session != "" {
		addRef(k.owned, session, string(kv.Key))
	}
	k.charge(kv, 1)
	k.changed(o, EventPut, kv, prev)
	return kv, prev
}

// remove deletes the record prev in entry o and records the event.
func (k *kvStore) remove(o op, prev *KV) {
	k.tree.Delete(prev)
	k.bytes -= len(prev.Key) + len(prev.Value)
	k.unown(prev)
	k.changed(o, EventDelete, &KV{Key: prev.Key, ModifyIndex: o.index}, prev)
}

func (k *kvStore) unown(kv *KV) {
	k.charge(kv, -1)
	if kv.Session == "" {
		return
	}
	delete(k.owned[kv.Session], string(kv.Key))
	if len(k.owned[kv.Session]) == 0 {
		delete(k.owned, kv.Session)
	}
}

// changed stamps the namespace's index, records the event and the key's
// topic.
func (k *kvStore) changed(o op, typ EventType, kv, prev *KV) {
	k.index = o.index
	k.hist.add(o, typ, kv, prev)
	*k.touched = append(*k.touched, KeyTopic(kv.Key))
}

// span returns the records in [start, end) in key order, as a range
// names it (see TxnOp): an empty end names the one key start, end {0} every key
// from start on. It visits at most limit+1 records when limit > 0 and
// reports whether there were more than limit.
func (k *kvStore) span(start, end []byte, limit int, visit func(*KV)) (more bool) {
	if len(end) == 0 {
		if kv, ok := k.get(start); ok {
			visit(kv)
		}
		return false
	}
	n := 0
	k.tree.AscendGreaterOrEqual(&KV{Key: start}, func(kv *KV) bool {
		if !isAll(end) && bytes.Compare(kv.Key, end) >= 0 {
			return false
		}
		if limit > 0 && n == limit {
			more = true
			return false
		}
		n++
		visit(kv)
		return true
	})
	return more
}

// isAll reports whether end is the end that names every key from the
// start on: the single byte 0.
func isAll(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// endSession deletes the keys session owns, in key order, in entry o: the
// entry that ends the session.
func (k *kvStore) endSession(o op, session string) {
	keys := slices.Sorted(maps.Keys(k.owned[session]))
	for _, key := range keys {
		kv, _ := k.get([]byte(key))
		if o.unsafe.keepEphemeral(kv) {
			k.detach(kv)
			continue
		}
		k.remove(o, kv)
	}
}

// detach makes the ephemeral key kv a key of no session, in place and
// without an event (the KeepEphemeral switch). The record is replaced,
// not changed: views of the state share records.
func (k *kvStore) detach(kv *KV) {
	c := *kv
	c.Session = ""
	k.tree.ReplaceOrInsert(&c)
	k.unown(kv)
}

// keysOf returns the keys session owns, sorted.
func (k *kvStore) keysOf(session string) [][]byte {
	keys := slices.Sorted(maps.Keys(k.owned[session]))
	out := make([][]byte, len(keys))
	for i, key := range keys {
		out[i] = []byte(key)
	}
	return out
}

// freeze returns a read-only copy of the namespace as it is now.
func (k *kvStore) freeze() kvView {
	return kvView{
		tree:      k.tree.Clone(),
		events:    k.hist.events.Clone(),
		index:     k.index,
		seq:       k.seq,
		compacted: k.hist.compacted,
	}
}

// kvView is the namespace frozen in a View.
type kvView struct {
	tree       *btree.BTreeG[*KV]
	events     *btree.BTreeG[*histEvent]
	index, seq uint64
	compacted  uint64
}
