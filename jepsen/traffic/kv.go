package traffic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// The namespace workload (KV) writes and reads keys under KVPrefix:
//
//   - registers: groups of history.KVRegisters keys, each written by
//     several workers with puts, compare-and-swaps on the modify index,
//     deletes and transactions over both keys of a group, and read with
//     default (lease) reads: package model's KV is their model;
//   - request numbers: a worker that sends a put again with the request
//     number it was applied with, after a later write of the key (the
//     repeat must be refused and change nothing);
//   - fenced writes: holders of KVFenceLock write KVFencedKey guarded by
//     their token, and once more after releasing the lock (the store must
//     refuse that one);
//   - ephemeral keys: sessions that put keys under KVEphemeralPrefix and
//     are then destroyed or left to expire, and a reader of that prefix;
//   - watchers of the whole prefix, following every change.
const (
	KVPrefix          = "jepsen/kv/"
	KVEphemeralPrefix = KVPrefix + "eph/"
	KVFencedKey       = KVPrefix + "fenced"
	KVFenceLock       = "jepsen/kvfence"
	// KVRetryGroup is the group only the request-number worker writes.
	KVRetryGroup = KVPrefix + "g2"
)

// KVGroups are the groups of registers the register workers share.
var KVGroups = []string{KVPrefix + "g0", KVPrefix + "g1"}

// KVKey is the key of register i of group.
func KVKey(group string, i int) string { return fmt.Sprintf("%s/%d", group, i) }

// kvRules is the namespace workload's token's rules: the keys under its
// prefix, and the lock that fences its guarded writes.
var kvRules = []acl.Rule{{Kind: acl.Key, Prefix: KVPrefix, Access: acl.Write}, {Kind: acl.Lock, Prefix: KVFenceLock, Access: acl.Write}}

// KVWrite is one write of a key the namespace workload attempted, with
// its outcome: what a watch may show (a value no write attempted, or only
// one that was refused, must never appear) and must show (every
// acknowledged write, at its index).
type KVWrite struct {
	Key    string
	Value  string `json:",omitempty"`
	Delete bool   `json:",omitempty"`
	Index  uint64 `json:",omitempty"`
	Status history.Status
}

// KVGrant is a grant of KVFenceLock.
type KVGrant struct {
	Session      string
	Token        uint64
	Call, Return int64
}

// FencedKVWrite is one write of KVFencedKey guarded by a holder's token.
type FencedKVWrite struct {
	Session string
	Token   uint64
	Value   string
	// Released is when the holder's release of the lock was acknowledged,
	// for a write sent after it (0: sent while holding).
	Released     int64 `json:",omitempty"`
	Index        uint64
	Status       history.Status
	Code         string `json:",omitempty"`
	Call, Return int64
}

// EphemeralSession is a session of the ephemeral worker: the keys it put
// (acknowledged or not) and when its end was known to be committed.
type EphemeralSession struct {
	Session string
	Keys    []string
	// Ended is the harness time by which the session's end was committed
	// (its destroy returned, or a read showed it gone); 0 if never seen.
	Ended int64 `json:",omitempty"`
	How   string
}

// EphemeralRead is one read of KVEphemeralPrefix: the keys it listed.
type EphemeralRead struct {
	Call, Return int64
	Keys         []string
}

// WatchedEvent is an event a watcher received.
type WatchedEvent struct {
	Index uint64
	Type  string
	Key   string
	Value string `json:",omitempty"`
}

// WatchLog is one stretch of a watcher's watch: from After (the index of
// the read it followed) on, every event received, in order. A watch that
// ends (compacted history, an error it cannot ride out) starts a new
// segment from a new read.
type WatchLog struct {
	Watcher, Segment int
	After            uint64
	Events           []WatchedEvent
	End              string `json:",omitempty"`
}

// KVEvidence is what the namespace workload saw, for its checkers.
type KVEvidence struct {
	Ops       []history.KVOp
	Writes    []KVWrite
	Grants    []KVGrant
	Fenced    []FencedKVWrite
	Ephemeral []EphemeralSession
	EphReads  []EphemeralRead
	Watches   []WatchLog
}

// kvLog collects the namespace workload's evidence beside the recorder.
type kvLog struct {
	writes   []KVWrite
	grants   []KVGrant
	fenced   []FencedKVWrite
	eph      []EphemeralSession
	ephReads []EphemeralRead
	watches  []WatchLog
}

// KV returns what the namespace workload saw.
func (t *Traffic) KV() KVEvidence {
	t.mu.Lock()
	defer t.mu.Unlock()
	return KVEvidence{
		Ops:       t.rec.KVOps(),
		Writes:    append([]KVWrite(nil), t.kvl.writes...),
		Grants:    append([]KVGrant(nil), t.kvl.grants...),
		Fenced:    append([]FencedKVWrite(nil), t.kvl.fenced...),
		Ephemeral: append([]EphemeralSession(nil), t.kvl.eph...),
		EphReads:  append([]EphemeralRead(nil), t.kvl.ephReads...),
		Watches:   append([]WatchLog(nil), t.kvl.watches...),
	}
}

func (t *Traffic) noteKV(f func(l *kvLog)) {
	t.mu.Lock()
	f(&t.kvl)
	t.mu.Unlock()
}

func (t *Traffic) noteWrite(w KVWrite) { t.noteKV(func(l *kvLog) { l.writes = append(l.writes, w) }) }

// kvStatus classifies a namespace call's error as status does, with the
// namespace's own refusals.
func kvStatus(err error) (history.Status, string) {
	switch code := api.CodeOf(err); code {
	case api.CodeCASFailed, api.CodeStaleToken, api.CodeCompacted:
		return history.Fail, code
	}
	return status(err)
}

// startKV starts the namespace workload's workers.
func (t *Traffic) startKV(ctx context.Context, rng *rand.Rand) error {
	token, err := t.cfg.newToken(ctx, "jepsen namespace workload", kvRules)
	if err != nil {
		return err
	}
	t.kvToken = token
	for i := range 3 {
		t.spawnRand(rng, 20+i, func(r *rand.Rand) { t.registerWorker(ctx, r) })
	}
	t.spawnRand(rng, 23, func(r *rand.Rand) { t.kvRetryWorker(ctx, r) })
	for i := range 2 {
		t.spawnRand(rng, 24+i, func(r *rand.Rand) { t.fencedKVWorker(ctx, r) })
	}
	t.spawnRand(rng, 26, func(r *rand.Rand) { t.ephemeralWorker(ctx, r) })
	t.spawnRand(rng, 27, func(r *rand.Rand) { t.ephemeralReader(ctx, r) })
	for i := range 2 {
		t.spawn(func() { t.watcher(ctx, i) })
	}
	return nil
}

// registerWorker runs gets, puts, compare-and-swaps, deletes and
// transactions on the shared groups of registers.
func (t *Traffic) registerWorker(ctx context.Context, rng *rand.Rand) {
	id := t.nextClient()
	kv := t.newClient(id, t.kvToken).KV()
	seen := map[string]history.KVSeen{} // what this worker last saw of each key
	n := 0
	for sleep(ctx, jitter(rng, 5*time.Millisecond, 40*time.Millisecond)) {
		group := KVGroups[rng.IntN(len(KVGroups))]
		op := history.KVOp{Client: id, Group: group, Key: rng.IntN(history.KVRegisters)}
		key := KVKey(group, op.Key)
		n++
		val := fmt.Sprintf("c%d-%d", id, n)
		switch p := rng.IntN(100); {
		case p < 35:
			op.Kind = history.KVGet
			t.kvGet(ctx, kv, op, seen)
			continue
		case p < 55:
			op.Kind, op.Value = history.KVPut, val
		case p < 75:
			op.Kind, op.Value, op.CAS = history.KVCAS, val, seen[key].ModifyIndex
			if rng.IntN(4) == 0 {
				op.CAS = 0 // create only if absent
			}
		case p < 90:
			op.Kind, op.Key, op.Value, op.Value2 = history.KVTxn, 0, val, val+"b"
			op.Expect = seen[KVKey(group, 0)].Value
		default:
			op.Kind = history.KVDelete
		}
		leave, ok := t.gate.pass(ctx)
		if !ok {
			return
		}
		t.count("kv " + string(op.Kind))
		t.kvWrite(ctx, kv, op, seen)
		leave()
	}
}

// kvGet reads one register and records it.
func (t *Traffic) kvGet(ctx context.Context, kv *client.KV, op history.KVOp, seen map[string]history.KVSeen) {
	key := KVKey(op.Group, op.Key)
	t.count("kv get")
	op = t.rec.KVInvoke(op)
	r, err := kv.Get(ctx, key, client.Default)
	st, code := kvStatus(err)
	if st == history.OK {
		s := history.KVSeen{}
		if r.KV != nil {
			s = history.KVSeen{Exists: true, Value: string(r.KV.Value), ModifyIndex: r.KV.ModifyIndex}
		}
		op.Seen = []history.KVSeen{s}
		seen[key] = s
	}
	op.Code, op.Err = code, errString(err)
	t.rec.KVComplete(op, st)
}

// kvWrite sends one write of the register workers and records it, with
// the writes it made for the watch checker.
func (t *Traffic) kvWrite(ctx context.Context, kv *client.KV, op history.KVOp, seen map[string]history.KVSeen) {
	key := KVKey(op.Group, op.Key)
	op = t.rec.KVInvoke(op)
	var err error
	switch op.Kind {
	case history.KVPut:
		var r api.KVPutResponse
		r, err = kv.Put(ctx, key, []byte(op.Value))
		op.Index = r.KV.ModifyIndex
	case history.KVCAS:
		var r api.KVPutResponse
		r, err = kv.CAS(ctx, key, []byte(op.Value), op.CAS)
		op.Index = r.KV.ModifyIndex
	case history.KVDelete:
		var r api.KVDeleteResponse
		r, err = kv.Delete(ctx, key)
		op.Deleted = r.Deleted
		if r.Deleted > 0 {
			op.Index = r.Index
		}
	case history.KVTxn:
		k0, k1 := KVKey(op.Group, 0), KVKey(op.Group, 1)
		var r api.TxnResponse
		r, err = kv.Txn().If(client.CompareValue(k0, "=", []byte(op.Expect))).
			Then(client.OpPut(k0, []byte(op.Value)), client.OpPut(k1, []byte(op.Value2))).
			Else(client.OpGet(k0), client.OpGet(k1)).Commit(ctx)
		op.Succeeded = r.Succeeded
		if err == nil && r.Succeeded {
			op.Index = r.Index
		}
		if err == nil && !r.Succeeded {
			op.Seen = txnSeen(r.Results)
			for i, s := range op.Seen {
				seen[KVKey(op.Group, i)] = s
			}
		}
	}
	st, code := kvStatus(err)
	op.Code, op.Err = code, errString(err)
	t.rec.KVComplete(op, st)
	if st == history.OK && op.Kind != history.KVDelete && op.Kind != history.KVTxn {
		seen[key] = history.KVSeen{Exists: true, Value: op.Value, ModifyIndex: op.Index}
	}
	switch {
	case op.Kind == history.KVTxn && (st != history.OK || op.Succeeded):
		t.noteWrite(KVWrite{Key: KVKey(op.Group, 0), Value: op.Value, Index: op.Index, Status: txnStatus(st, op.Succeeded)})
		t.noteWrite(KVWrite{Key: KVKey(op.Group, 1), Value: op.Value2, Index: op.Index, Status: txnStatus(st, op.Succeeded)})
	case op.Kind == history.KVDelete:
		t.noteWrite(KVWrite{Key: key, Delete: true, Index: op.Index, Status: st})
	case op.Kind != history.KVTxn:
		t.noteWrite(KVWrite{Key: key, Value: op.Value, Index: op.Index, Status: st})
	}
}

// txnStatus is the status of a transaction's puts.
func txnStatus(st history.Status, succeeded bool) history.Status {
	if st == history.OK && !succeeded {
		return history.Fail
	}
	return st
}

// txnSeen is what a transaction's two gets read.
func txnSeen(results []api.TxnResult) []history.KVSeen {
	out := make([]history.KVSeen, 0, len(results))
	for _, r := range results {
		s := history.KVSeen{}
		if len(r.KVs) > 0 {
			s = history.KVSeen{Exists: true, Value: string(r.KVs[0].Value), ModifyIndex: r.KVs[0].ModifyIndex}
		} else if r.KV != nil {
			s = history.KVSeen{Exists: true, Value: string(r.KV.Value), ModifyIndex: r.KV.ModifyIndex}
		}
		out = append(out, s)
	}
	return out
}

// kvRetryWorker puts a value with request number n, writes the key again
// with n+1, and then sends the first put again with n, as a client's
// retry or a late duplicate would arrive: lockd must refuse it as a
// repeat and leave the second value. Then it reads the key. It speaks
// HTTP itself, since the client library numbers its requests on its own.
func (t *Traffic) kvRetryWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.kvToken, nil, rng)
	defer w.endSession()
	hc := t.gated(t.kvToken)
	reader := t.newClient(w.id, t.kvToken).KV()
	var seq uint64
	var last string
	n := 0
	for sleep(ctx, jitter(rng, 20*time.Millisecond, 120*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil || !s.Alive() {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if s.ID() != last {
			last, seq = s.ID(), 0
		}
		ep := t.cfg.Endpoints[rng.IntN(len(t.cfg.Endpoints))]
		key := KVKey(KVRetryGroup, 0)
		put := func(kind history.KVKind, value string, num uint64) history.KVOp {
			op := t.rec.KVInvoke(history.KVOp{Client: w.id, Group: KVRetryGroup, Kind: kind, Value: value})
			var out api.KVPutResponse
			err := doJSON(ctx, hc, http.MethodPut, ep+"/v1/kv/"+key, api.KVPutRequest{Value: []byte(value), Session: s.ID(), Seq: num}, &out)
			st, code := kvStatus(err)
			op.Index, op.Code, op.Err = out.KV.ModifyIndex, code, errString(err)
			t.rec.KVComplete(op, st)
			t.noteWrite(KVWrite{Key: key, Value: value, Index: op.Index, Status: st})
			op.Status = st
			return op
		}
		leave, ok := t.gate.pass(ctx)
		if !ok {
			return
		}
		n++
		seq += 2
		first := put(history.KVPut, fmt.Sprintf("r%d-%d", w.id, n), seq-1)
		if first.Status == history.OK {
			if second := put(history.KVPut, fmt.Sprintf("r%d-%db", w.id, n), seq); second.Status == history.OK {
				t.count("kv repeat")
				put(history.KVRepeat, first.Value, seq-1)
			}
		}
		leave()
		t.kvGet(ctx, reader, history.KVOp{Client: w.id, Group: KVRetryGroup, Kind: history.KVGet}, map[string]history.KVSeen{})
	}
}

// fencedKVWorker takes KVFenceLock, writes KVFencedKey guarded by its
// token a few times, releases the lock and then writes once more with the
// old token, as a deposed holder's late write would arrive.
func (t *Traffic) fencedKVWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.kvToken, nil, rng)
	defer w.endSession()
	kv := t.newClient(w.id, t.kvToken).KV()
	n := 0
	for sleep(ctx, jitter(rng, 10*time.Millisecond, 80*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil || !s.Alive() {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		leave, ok := t.gate.pass(ctx)
		if !ok {
			return
		}
		m := client.NewMutex(s, KVFenceLock)
		call := t.rec.Now()
		err := m.TryLock(ctx)
		if err != nil {
			leave()
			continue
		}
		token := m.Token()
		t.noteKV(func(l *kvLog) {
			l.grants = append(l.grants, KVGrant{Session: s.ID(), Token: token, Call: call, Return: t.rec.Now()})
		})
		write := func(released int64) {
			n++
			fw := FencedKVWrite{Session: s.ID(), Token: token, Value: fmt.Sprintf("f%d-%d-t%d", w.id, n, token), Released: released}
			fw.Call = t.rec.Now()
			r, err := kv.Put(ctx, KVFencedKey, []byte(fw.Value), client.WithGuard(KVFenceLock, token))
			fw.Return = t.rec.Now()
			fw.Status, fw.Code = kvStatus(err)
			if fw.Status == history.Unknown {
				fw.Return = history.Infinity
			}
			fw.Index = r.KV.ModifyIndex
			t.noteKV(func(l *kvLog) { l.fenced = append(l.fenced, fw) })
			t.noteWrite(KVWrite{Key: KVFencedKey, Value: fw.Value, Index: fw.Index, Status: fw.Status})
		}
		for range 1 + rng.IntN(3) {
			write(0)
		}
		t.count("kv fenced")
		if m.Unlock(ctx) == nil {
			released := t.rec.Now()
			if sleep(ctx, jitter(rng, 0, 30*time.Millisecond)) {
				t.count("kv fenced late")
				write(released)
			}
		}
		leave()
	}
}

// ephemeralWorker creates sessions that put ephemeral keys, then destroys
// each or abandons it to expire, and notes when its end was committed.
func (t *Traffic) ephemeralWorker(ctx context.Context, rng *rand.Rand) {
	id := t.nextClient()
	c := t.newClient(id, t.kvToken)
	hc := t.gated(t.kvToken)
	ttl := max(t.cfg.TTL, time.Second)
	for i := 0; sleep(ctx, jitter(rng, 20*time.Millisecond, 100*time.Millisecond)); i++ {
		ep := t.cfg.Endpoints[i%len(t.cfg.Endpoints)]
		leave, ok := t.gate.pass(ctx)
		if !ok {
			return
		}
		zero := api.Duration(0)
		var sess api.Session
		if doJSON(ctx, hc, http.MethodPost, ep+"/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &zero, Name: "jepsen-ephemeral"}, &sess) != nil {
			leave()
			continue
		}
		es := EphemeralSession{Session: sess.ID}
		kv := c.SessionKV(sess.ID)
		for k := range 1 + rng.IntN(2) {
			key := fmt.Sprintf("%s%s-%d", KVEphemeralPrefix, sess.ID, k)
			val := fmt.Sprintf("e%s-%d", sess.ID, k)
			r, err := kv.Put(ctx, key, []byte(val), client.Ephemeral())
			st, _ := kvStatus(err)
			if st != history.Fail {
				es.Keys = append(es.Keys, key)
			}
			t.noteWrite(KVWrite{Key: key, Value: val, Index: r.KV.ModifyIndex, Status: st})
		}
		leave()
		t.count("kv ephemeral")
		if !sleep(ctx, jitter(rng, 50*time.Millisecond, 300*time.Millisecond)) {
			t.noteKV(func(l *kvLog) { l.eph = append(l.eph, es) })
			return
		}
		if rng.IntN(3) > 0 {
			es.How = "destroy"
			leave := t.gate.passSoon(ctx)
			err := doJSON(ctx, hc, http.MethodDelete, ep+"/v1/sessions/"+sess.ID, nil, nil)
			if err == nil || api.CodeOf(err) == api.CodeSessionExpired {
				es.Ended = t.rec.Now()
			}
			leave()
		} else {
			es.How = "expire"
			es.Ended = t.awaitGone(ctx, c, sess.ID, ttl)
		}
		t.noteKV(func(l *kvLog) { l.eph = append(l.eph, es) })
	}
}

// awaitGone reads session id until a read shows it gone, and returns
// when that read returned (0 if none did within a bound).
func (t *Traffic) awaitGone(ctx context.Context, c *client.Client, id string, ttl time.Duration) int64 {
	deadline := time.Now().Add(3*ttl + 10*time.Second)
	for time.Now().Before(deadline) && sleep(ctx, 100*time.Millisecond) {
		_, err := c.SessionInfo(ctx, id, client.Default)
		if code := api.CodeOf(err); code == api.CodeSessionExpired || code == api.CodeNotFound {
			return t.rec.Now()
		}
	}
	return 0
}

// ephemeralReader lists KVEphemeralPrefix with default reads.
func (t *Traffic) ephemeralReader(ctx context.Context, rng *rand.Rand) {
	kv := t.newClient(t.nextClient(), t.kvToken).KV()
	for sleep(ctx, jitter(rng, 20*time.Millisecond, 60*time.Millisecond)) {
		call := t.rec.Now()
		l, err := kv.List(ctx, KVEphemeralPrefix, client.ListOptions{KeysOnly: true})
		if err != nil {
			continue
		}
		r := EphemeralRead{Call: call, Return: t.rec.Now()}
		for _, k := range l.KVs {
			r.Keys = append(r.Keys, k.Key)
		}
		t.count("kv ephemeral read")
		t.noteKV(func(l *kvLog) { l.ephReads = append(l.ephReads, r) })
	}
}

// watcher follows every change under KVPrefix with the client library's
// Watch, from the index of a read, in segments: a watch that ends
// (compacted history, or an error it cannot ride out) starts again from
// a new read.
func (t *Traffic) watcher(ctx context.Context, n int) {
	kv := t.newClient(t.nextClient(), t.kvToken).KV()
	for seg := 0; ctx.Err() == nil; seg++ {
		_, after, err := kv.Count(ctx, KVPrefix, client.ListOptions{})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		log := WatchLog{Watcher: n, Segment: seg, After: after}
		for ev := range kv.Watch(ctx, KVPrefix, after, client.WatchPrefix(), client.WatchWait(2*time.Second)) {
			if ev.Err != nil {
				log.End = errString(ev.Err)
				break
			}
			log.Events = append(log.Events, WatchedEvent{Index: ev.Index, Type: ev.Type, Key: ev.KV.Key, Value: string(ev.KV.Value)})
		}
		t.count("kv watch segment")
		t.noteKV(func(l *kvLog) { l.watches = append(l.watches, log) })
	}
}

// doJSON sends in (none if nil) with method to url, with a one-second
// deadline, and decodes a successful answer into out (if not nil); an
// error answer comes back as an *api.Error.
func doJSON(ctx context.Context, hc *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e api.Error
		if json.Unmarshal(raw, &e) != nil || e.Code == "" {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
		}
		return &e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}
