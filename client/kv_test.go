package client_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// Put, Get, CAS, List through its pages, Count, Delete with a cas and of a
// prefix, a sequential put, and a transaction taking each branch, on one
// node.
func TestKV_ReadsWritesAndTxn(t *testing.T) {
	c := servertest.New(t, 1)
	kv := mustClient(t, c.URLs()...).KV()
	ctx := ctxT(t, 20*time.Second)

	put, err := kv.Put(ctx, "cfg/a", []byte("one"), client.WithFlags(7))
	if err != nil || put.KV.Version != 1 || put.KV.Flags != 7 || put.Prev != nil || put.Index != put.KV.ModifyIndex {
		t.Fatalf("put: %+v %v", put, err)
	}
	if r, err := kv.Get(ctx, "cfg/none", client.Default); !errors.Is(err, client.ErrKeyNotFound) || r.KV != nil || r.Index != put.Index {
		t.Fatalf("get of a missing key: %+v %v (want ErrKeyNotFound with the namespace's index %d)", r, err, put.Index)
	}
	got, err := kv.Get(ctx, "cfg/a", client.Consistent)
	if err != nil || string(got.KV.Value) != "one" || got.Index != put.Index {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := kv.CAS(ctx, "cfg/a", []byte("x"), 0); !errors.Is(err, client.ErrCASFailed) {
		t.Fatalf("cas 0 on an existing key: %v, want ErrCASFailed", err)
	}
	if _, err := kv.CAS(ctx, "cfg/a", []byte("x"), put.Index+100); !errors.Is(err, client.ErrCASFailed) {
		t.Fatalf("cas on another index: %v, want ErrCASFailed", err)
	}
	two, err := kv.CAS(ctx, "cfg/a", []byte("two"), put.Index)
	if err != nil || two.KV.Version != 2 || string(two.Prev.Value) != "one" {
		t.Fatalf("cas: %+v %v", two, err)
	}
	if _, err := kv.Delete(ctx, "cfg/a", client.WithCAS(put.Index)); !errors.Is(err, client.ErrCASFailed) {
		t.Fatalf("delete with a stale cas: %v", err)
	}
	if _, err := kv.Put(ctx, "cfg/a", nil, client.Ephemeral()); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("ephemeral without a session: %v, want ErrBadRequest", err)
	}

	// 25 keys under p/, read in pages of 10; others around them.
	for _, k := range []string{"p", "q/0", "o/9"} {
		if _, err := kv.Put(ctx, k, []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 25 {
		if _, err := kv.Put(ctx, fmt.Sprintf("p/%02d", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	page, err := kv.ListPage(ctx, "p/", client.ListOptions{Limit: 10})
	if err != nil || len(page.KVs) != 10 || page.Next != "p/09" || page.KVs[0].Key != "p/00" {
		t.Fatalf("first page: %d keys, next %q, %v", len(page.KVs), page.Next, err)
	}
	all, err := kv.List(ctx, "p/", client.ListOptions{Limit: 10, KeysOnly: true})
	if err != nil || len(all.KVs) != 25 || all.Count != 25 || all.Index == 0 {
		t.Fatalf("list: %d keys, %v", len(all.KVs), err)
	}
	for i, e := range all.KVs {
		if e.Key != fmt.Sprintf("p/%02d", i) || e.Value != nil {
			t.Fatalf("list[%d] = %+v: want p/%02d without its value", i, e, i)
		}
	}
	if n, index, err := kv.Count(ctx, "p/", client.ListOptions{}); n != 25 || index < all.Index || err != nil {
		t.Fatalf("count: %d at %d, %v", n, index, err)
	}

	seq, err := kv.Put(ctx, "q/job-", []byte("1"), client.Sequential())
	if err != nil || !strings.HasPrefix(seq.KV.Key, "q/job-") || len(seq.KV.Key) != len("q/job-")+20 {
		t.Fatalf("sequential put: %+v %v", seq, err)
	}

	// A transaction: the first time cfg/b is missing (Then), the second
	// time it exists (Else).
	txn := func() api.TxnResponse {
		t.Helper()
		r, err := kv.Txn().
			If(client.KeyMissing("cfg/b"), client.CompareValue("cfg/a", "=", []byte("two"))).
			Then(client.OpPut("cfg/b", []byte("b")), client.OpGetPrefix("cfg/", 0)).
			Else(client.OpGet("cfg/b"), client.OpDelete("cfg/a")).
			Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := txn(); !r.Succeeded || len(r.Results) != 2 || r.Results[0].KV.Key != "cfg/b" || r.Results[1].Count != 2 {
		t.Fatalf("txn, success branch: %+v", r)
	}
	if r := txn(); r.Succeeded || len(r.Results) != 2 || string(r.Results[0].KVs[0].Value) != "b" || r.Results[1].Count != 1 {
		t.Fatalf("txn, failure branch: %+v", r)
	}
	if _, err := kv.Get(ctx, "cfg/a", client.Default); !errors.Is(err, client.ErrKeyNotFound) {
		t.Fatalf("cfg/a after the failure branch deleted it: %v", err)
	}

	del, err := kv.DeletePrefix(ctx, "p/")
	if err != nil || del.Deleted != 25 {
		t.Fatalf("delete prefix: %+v %v", del, err)
	}
	if n, _, err := kv.Count(ctx, "", client.ListOptions{}); n != 5 || err != nil { // p, q/0, o/9, the sequential key, cfg/b
		t.Fatalf("keys left: %d, %v", n, err)
	}
	if _, err := kv.DeletePrefix(ctx, ""); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("delete of an empty prefix: %v", err)
	}
}

// An ephemeral key goes with its session; a write fenced by a Mutex is
// refused with ErrStaleToken once the lock has moved to another holder.
func TestKV_EphemeralAndFencedWrites(t *testing.T) {
	c := servertest.New(t, 1)
	cl := mustClient(t, c.URLs()...)
	ctx := ctxT(t, 20*time.Second)

	s := mustSession(t, cl, client.WithLockDelay(0))
	put, err := s.KV().Put(ctx, "svc/leader", []byte("http://10.0.0.1:8080"), client.Ephemeral())
	if err != nil || put.KV.Session != s.ID() {
		t.Fatalf("ephemeral put: %+v %v", put, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.KV().Get(ctx, "svc/leader", client.Default); !errors.Is(err, client.ErrKeyNotFound) {
		t.Fatalf("ephemeral key after its session ended: %v", err)
	}
	if _, err := s.KV().Put(ctx, "svc/x", nil); !errors.Is(err, client.ErrSessionLost) {
		t.Fatalf("a write through a closed session: %v, want ErrSessionLost", err)
	}

	s1, s2 := mustSession(t, cl, client.WithLockDelay(0)), mustSession(t, cl, client.WithLockDelay(0))
	m1, m2 := client.NewMutex(s1, "jobs/out"), client.NewMutex(s2, "jobs/out")
	kv := cl.KV()
	if _, err := kv.Put(ctx, "out/x", []byte("1"), client.FencedBy(m1)); !errors.Is(err, client.ErrNotLocked) {
		t.Fatalf("fenced by a mutex that holds nothing: %v, want ErrNotLocked", err)
	}
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	old := m1.Token()
	if _, err := kv.Put(ctx, "out/x", []byte("1"), client.FencedBy(m1)); err != nil {
		t.Fatalf("fenced write of the holder: %v", err)
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "out/x", []byte("late"), client.WithGuard("jobs/out", old)); !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("write under the old token after the lock moved: %v, want ErrStaleToken", err)
	}
	if _, err := kv.Txn().Then(client.OpDelete("out/x")).Guard("jobs/out", old).Commit(ctx); !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("transaction under the old token: %v, want ErrStaleToken", err)
	}
	if _, err := kv.Delete(ctx, "out/x", client.FencedBy(m2)); err != nil {
		t.Fatalf("fenced delete of the new holder: %v", err)
	}
}

// A write of a session whose answer is lost (504) is repeated with the same
// request number: the leader applies it once, and the repeat is told as
// ErrRepeated. Without a session, the 504 is returned at once.
func TestKV_LostAnswerAppliedOnce(t *testing.T) {
	c := servertest.New(t, 1)
	var lose atomic.Int32 // answers of PUT to lose, as a follower that lost the leader's answer
	u, _ := url.Parse(c.URL(0))
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != "PUT" || lose.Add(-1) < 0 {
			return nil
		}
		resp.Body.Close()
		body := `{"error":"the answer was lost; the outcome is unknown","code":"timeout"}`
		resp.StatusCode, resp.Status = http.StatusGatewayTimeout, "504 Gateway Timeout"
		resp.Body = io.NopCloser(strings.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	cl := mustClient(t, front.URL)
	direct := mustClient(t, c.URLs()...).KV()
	ctx := ctxT(t, 20*time.Second)

	lose.Store(1)
	if _, err := cl.KV().Put(ctx, "n/plain", []byte("v")); !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("sessionless put with a lost answer: %v, want ErrTimeout (outcome unknown, not repeated)", err)
	}
	s := mustSession(t, cl)
	lose.Store(1)
	_, err := s.KV().Put(ctx, "n/once", []byte("v"))
	if !errors.Is(err, client.ErrRepeated) {
		t.Fatalf("session put with a lost answer: %v, want ErrRepeated", err)
	}
	if r, err := direct.Get(ctx, "n/once", client.Default); err != nil || r.KV.Version != 1 {
		t.Fatalf("the key after the repeat: %+v %v: want version 1, written once", r.KV, err)
	}
	if _, err := s.KV().Put(ctx, "n/once", []byte("w")); err != nil {
		t.Fatalf("the next put, with a new number: %v", err)
	}
}

// collect reads n events from a watch, failing on an error or a timeout.
func collect(t *testing.T, ch <-chan client.WatchEvent, n int, within time.Duration) []api.Event {
	t.Helper()
	var out []api.Event
	timeout := time.After(within)
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d events", len(out))
			}
			if ev.Err != nil {
				t.Fatalf("watch ended after %d events: %v", len(out), ev.Err)
			}
			out = append(out, ev.Event)
		case <-timeout:
			t.Fatalf("%d events in %v, want %d", len(out), within, n)
		}
	}
	return out
}

// A prefix watch delivers every put once and in order while the writer
// writes through a leadership transfer, the loss of the watch's
// connections, and the crash of the new leader: the watch rides out each,
// asking again, on another member if need be, from the index it had. The
// watch reaches each node through a proxy of its own (so that it does not
// follow the leader around them), whose connections the test cuts.
func TestKV_WatchAcrossLeadershipTransfer(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	var fronts []*httptest.Server
	var frontURLs []string
	for _, u := range c.URLs() {
		target, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		f := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
		t.Cleanup(f.Close)
		fronts, frontURLs = append(fronts, f), append(frontURLs, f.URL)
	}
	watcher, err := client.NewWithConfig(client.Config{Endpoints: frontURLs, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	kv := mustSession(t, cl).KV()
	_, index, err := kv.Count(ctx, "w/", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := watcher.KV().Watch(ctx, "w/", index, client.WatchPrefix(), client.WatchWait(2*time.Second))
	const n = 24
	// Read the events as they come, so that the watch is asking while
	// the leader changes and its connections are cut.
	collected := make(chan []api.Event, 1)
	go func() {
		var got []api.Event
		for ev := range ch {
			if ev.Err != nil {
				t.Errorf("watch ended after %d events: %v", len(got), ev.Err)
				break
			}
			if got = append(got, ev.Event); len(got) == n {
				break
			}
		}
		collected <- got
	}()
	want := make([]uint64, n)
	for i := range n {
		switch i {
		case n / 4:
			if _, err := cl.TransferLeadership(ctx, ""); err != nil {
				t.Fatalf("leader transfer: %v", err)
			}
		case n / 2:
			for _, f := range fronts {
				f.CloseClientConnections() // the blocking query in flight fails
			}
		case 3 * n / 4:
			c.Crash(c.WaitLeader())
		}
		put, err := kv.Put(ctx, fmt.Sprintf("w/%02d", i), []byte("v"))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		want[i] = put.Index
	}
	var got []api.Event
	select {
	case got = <-collected:
	case <-time.After(20 * time.Second):
		t.Fatalf("the watch did not deliver %d events in 20s", n)
	}
	if len(got) != n {
		t.Fatalf("the watch delivered %d events, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Type != "put" || e.KV.Key != fmt.Sprintf("w/%02d", i) || e.Index != want[i] {
			t.Fatalf("event %d: %+v, want the put of w/%02d at %d", i, e, i, want[i])
		}
	}
	// Nothing more: a duplicate would show here.
	if _, err := cl.KV().Put(ctx, "w/last", nil); err != nil {
		t.Fatal(err)
	}
	if e := collect(t, ch, 1, 10*time.Second)[0]; e.KV.Key != "w/last" {
		t.Fatalf("after the %d puts the watch delivered %+v, want w/last", n, e)
	}
}

// A watch from an index the history no longer reaches ends with
// ErrCompacted carrying the oldest index; a read and a watch from its
// index go on.
func TestKV_WatchCompacted(t *testing.T) {
	c := servertest.New(t, 1, func(cfg *lease.Config) { cfg.KVHistory = fsm.HistoryLimits{MinEvents: 5, MaxEvents: 10} })
	kv := mustClient(t, c.URLs()...).KV()
	ctx := ctxT(t, 20*time.Second)
	first, err := kv.Put(ctx, "h", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := kv.Put(ctx, "h", []byte(fmt.Sprint(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	ev, ok := <-kv.Watch(ctx, "h", first.Index-1)
	var ce *api.CompactedError
	if !ok || !errors.Is(ev.Err, client.ErrCompacted) || !errors.As(ev.Err, &ce) || ce.Oldest <= first.Index {
		t.Fatalf("watch from a compacted index: %+v %v", ev, ok)
	}
	r, err := kv.Get(ctx, "h", client.Default)
	if err != nil {
		t.Fatal(err)
	}
	ch := kv.Watch(ctx, "h", r.Index)
	if _, err := kv.Put(ctx, "h", []byte("next")); err != nil {
		t.Fatal(err)
	}
	if e := collect(t, ch, 1, 10*time.Second)[0]; string(e.KV.Value) != "next" || e.Prev == nil || e.Prev.ModifyIndex != r.Index {
		t.Fatalf("watch after the read: %+v", e)
	}
}
