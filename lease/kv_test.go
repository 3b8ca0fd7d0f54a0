package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The API's bounds of the namespace are the state machine's.
func TestKV_BoundsMatchTheFSM(t *testing.T) {
	if api.MaxKVValueLen != fsm.MaxValueLen || api.MaxTxnOps != fsm.MaxTxnOps {
		t.Fatalf("api: value %d, ops %d; fsm: value %d, ops %d", api.MaxKVValueLen, api.MaxTxnOps, fsm.MaxValueLen, fsm.MaxTxnOps)
	}
	c := validConfig()
	c.KVHistory = fsm.HistoryLimits{MinEvents: 5, MaxEvents: 4}
	if err := c.Validate(); err == nil {
		t.Fatal("history limits with MinEvents above MaxEvents were accepted")
	}
}

// Writes of the namespace: a cas that fails costs its entry and writes
// nothing; refusals the leader tells in advance (an unknown session, a
// guard that does not hold) cost none; each gets its code.
func TestKV_WritesAndRefusals(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.startTerm()
	ctx := context.Background()
	put := func(key string, req api.KVPutRequest) func() error {
		return func() error { _, err := tn.n.PutKV(ctx, key, req); return err }
	}
	tn.expectCode("put", 1, "", put("a", api.KVPutRequest{Value: []byte("1")}))
	zero := uint64(0)
	tn.expectCode("cas 0 on an existing key", 1, api.CodeCASFailed, put("a", api.KVPutRequest{Value: []byte("2"), CAS: &zero}))
	if r, _ := tn.n.KV(ctx, "a", api.ReadOptions{}); r.KV == nil || string(r.KV.Value) != "1" {
		t.Fatalf("a after a failed cas: %+v", r.KV)
	}
	const gone = "0123456789abcdef0123456789abcdef"
	tn.expectCode("ephemeral put by an unknown session", 0, api.CodeSessionExpired, put("b", api.KVPutRequest{Session: gone, Ephemeral: true}))
	tn.expectCode("guard on a free lock", 0, api.CodeNotHolder, put("b", api.KVPutRequest{Guard: &api.Guard{Lock: "l", Token: 3}}))
	s1, s2 := tn.session(0, time.Hour), tn.session(0, time.Hour)
	if err := tn.tryAcquire(s1, "l"); err != nil {
		t.Fatal(err)
	}
	tok := tn.n.fsm.Lock("l").Holders[0].Token
	tn.expectCode("guarded put by the holder", 1, "", put("b", api.KVPutRequest{Guard: &api.Guard{Lock: "l", Token: tok}}))
	if err := tn.n.Release(ctx, "l", api.SessionRequest{Session: s1}); err != nil {
		t.Fatal(err)
	}
	if err := tn.tryAcquire(s2, "l"); err != nil {
		t.Fatal(err)
	}
	tn.expectCode("guarded put after the lock moved", 0, api.CodeStaleToken, put("b", api.KVPutRequest{Guard: &api.Guard{Lock: "l", Token: tok}}))
	tn.expectCode("txn with a repeated request number", 1, "", func() error {
		_, err := tn.n.Txn(ctx, api.TxnRequest{Session: s2, Seq: 4, Success: []api.TxnOp{{Put: &api.TxnPut{Key: "c"}}}})
		return err
	})
	tn.expectCode("its repeat", 0, api.CodeRepeated, func() error {
		_, err := tn.n.Txn(ctx, api.TxnRequest{Session: s2, Seq: 4, Success: []api.TxnOp{{Put: &api.TxnPut{Key: "c"}}}})
		return err
	})
	tn.expectCode("delete of a prefix", 1, "", func() error {
		d, err := tn.n.DeleteKV(ctx, api.KVDelete{Key: "", Prefix: true})
		if err == nil && d.Deleted != 3 {
			t.Errorf("deleted %d keys, want 3", d.Deleted)
		}
		return err
	})
}

// A blocking watch returns with the first event after its index, and a
// watch from before the history is refused with the oldest index.
func TestKV_Watch(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	if err := tn.n.fsm.SetHistoryLimits(fsm.HistoryLimits{MinEvents: 2, MaxEvents: 10}); err != nil {
		t.Fatal(err)
	}
	tn.startTerm()
	ctx := context.Background()
	first, err := tn.n.PutKV(ctx, "w/a", api.KVPutRequest{Value: []byte("1")})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan api.KVEvents, 1)
	go func() {
		ev, err := tn.n.KVWatch(ctx, api.WatchOptions{ReadOptions: api.ReadOptions{Index: first.Index, Wait: 10 * time.Second}, Key: "w/", Prefix: true, Limit: 10})
		if err != nil {
			t.Error(err)
		}
		done <- ev
	}()
	time.Sleep(50 * time.Millisecond)
	tn.mustPropose(fsm.Command{Op: fsm.OpTxn, Txn: &fsm.Txn{Success: []fsm.TxnOp{fsm.Put([]byte("other"), nil)}}})
	second, err := tn.n.PutKV(ctx, "w/b", api.KVPutRequest{Value: []byte("2")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-done:
		if len(ev.Events) != 1 || ev.Events[0].KV.Key != "w/b" || ev.Events[0].Index != second.Index || ev.Index < second.Index {
			t.Fatalf("watch: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not return with the put")
	}
	for range 3 {
		if _, err := tn.n.PutKV(ctx, "w/c", api.KVPutRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = tn.n.KVWatch(ctx, api.WatchOptions{ReadOptions: api.ReadOptions{Index: first.Index}, Key: "w/a", Limit: 10})
	var ce *api.CompactedError
	if !errors.As(err, &ce) || api.CodeOf(err) != api.CodeCompacted || ce.Oldest <= first.Index || tn.n.count.kvCompacted.Load() != 1 {
		t.Fatalf("watch from a compacted index: %v", err)
	}
}

// A token's limits on keys: a put past them is answered quota_exceeded
// without a log entry, counted, and a put by a token revoked since is
// refused unauthorized; what the token owns is in its listing.
func TestKV_TokenLimits(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.startTerm()
	ctx := context.Background()
	tok, err := tn.n.CreateToken(ctx, api.CreateTokenRequest{Rules: []acl.Rule{{Kind: acl.Key, Access: acl.Write}}, MaxKeys: 1, MaxBytes: 100})
	if err != nil || tok.MaxKeys != 1 || tok.MaxBytes != 100 {
		t.Fatalf("create: %+v %v", tok, err)
	}
	put := func(key string) func() error {
		return func() error {
			_, err := tn.n.PutKV(ctx, key, api.KVPutRequest{Value: []byte("v"), Owner: tok.AccessorID})
			return err
		}
	}
	tn.expectCode("put within the limits", 1, "", put("a"))
	tn.expectCode("put past max_keys", 0, api.CodeQuotaExceeded, put("b"))
	tn.expectCode("transaction past max_keys", 0, api.CodeQuotaExceeded, func() error {
		_, err := tn.n.Txn(ctx, api.TxnRequest{Owner: tok.AccessorID, Success: []api.TxnOp{{Put: &api.TxnPut{Key: "c"}}}})
		return err
	})
	tn.expectCode("value over the bound", 0, api.CodeTooLarge, func() error {
		_, err := tn.n.PutKV(ctx, "a", api.KVPutRequest{Value: make([]byte, api.MaxKVValueLen+1), Owner: tok.AccessorID})
		return err
	})
	if n := tn.n.count.kvQuota.Load(); n != 2 {
		t.Fatalf("%d refusals counted, want 2", n)
	}
	list, err := tn.n.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Tokens {
		if l.AccessorID == tok.AccessorID && (l.Usage == nil || *l.Usage != api.KeyUsage{Keys: 1, Bytes: 2}) {
			t.Fatalf("listed %+v, usage %+v", l, l.Usage)
		}
	}
	if err := tn.n.RevokeToken(ctx, tok.AccessorID); err != nil {
		t.Fatal(err)
	}
	tn.expectCode("put by a revoked token", 0, api.CodeUnauthorized, put("a"))
}
