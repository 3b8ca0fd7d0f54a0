package server_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// kvHistory keeps few events, so that a watch from an early index finds
// the history compacted.
var kvHistory = fsm.HistoryLimits{MinEvents: 40, MaxEvents: 1000}

// watchOnce sends one watch and returns its status, answer and headers.
func watchOnce(t *testing.T, base, query string) (int, api.KVEvents, api.Error, http.Header) {
	t.Helper()
	client := http.Client{Timeout: 40 * time.Second}
	resp, err := client.Get(base + query)
	if err != nil {
		return 0, api.KVEvents{}, api.Error{Code: "transport", Message: err.Error()}, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ev api.KVEvents
	var e api.Error
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("watch %s: %q: %v", query, raw, err)
		}
	} else {
		_ = json.Unmarshal(raw, &e)
	}
	return resp.StatusCode, ev, e, resp.Header
}

// TestKV_Cluster runs the namespace through a three-node cluster: writes
// and reads through a follower, an ephemeral key deleted when its
// session expires (seen by a watcher), a fenced write refused once the
// lock moved on, a prefix watch that follows its index across a change
// of leader and sees every event once and in order, and a watch from an
// index the history no longer reaches.
func TestKV_Cluster(t *testing.T) {
	c := servertest.New(t, 3, func(cfg *lease.Config) { cfg.KVHistory = kvHistory })
	leader := c.WaitLeader()
	f := newAPI(t, c, c.Follower(leader))

	t.Run("through a follower", func(t *testing.T) {
		var put api.KVPutResponse
		f.must("PUT", "/v1/kv/cfg/a", api.KVPutRequest{Value: []byte("one"), Flags: 3}, &put)
		if put.KV.Key != "cfg/a" || string(put.KV.Value) != "one" || put.KV.Version != 1 || put.Index != put.KV.ModifyIndex || put.KV.Flags != 3 {
			t.Fatalf("put: %+v", put)
		}
		var got api.KVRead
		f.must("GET", "/v1/kv/cfg/a", nil, &got)
		if got.KV == nil || string(got.KV.Value) != "one" || got.Index != put.Index {
			t.Fatalf("get: %+v", got)
		}
		if st, e := f.do("PUT", "/v1/kv/cfg/a", api.KVPutRequest{Value: []byte("two"), CAS: new(uint64)}, nil); st != 409 || e.Code != api.CodeCASFailed {
			t.Fatalf("cas 0 on an existing key: %d %+v", st, e)
		}
		cas := put.Index
		var put2 api.KVPutResponse
		f.must("PUT", "/v1/kv/cfg/a", api.KVPutRequest{Value: []byte("two"), CAS: &cas}, &put2)
		if put2.KV.Version != 2 || put2.Prev == nil || string(put2.Prev.Value) != "one" {
			t.Fatalf("cas put: %+v", put2)
		}
		if st, e := f.do("DELETE", fmt.Sprintf("/v1/kv/cfg/a?cas=%d", cas), nil, nil); st != 409 || e.Code != api.CodeCASFailed {
			t.Fatalf("delete with a stale cas: %d %+v", st, e)
		}
		var txn api.TxnResponse
		one := uint64(1)
		f.must("POST", "/v1/txn", api.TxnRequest{
			Compare: []api.Compare{{Key: "cfg/a", Target: api.TargetExists, Op: "=", Number: &one}},
			Success: []api.TxnOp{{Put: &api.TxnPut{Key: "cfg/b", Value: []byte("b")}}, {Get: &api.TxnRange{Key: "cfg/", Prefix: true}}},
		}, &txn)
		if !txn.Succeeded || len(txn.Results) != 2 || txn.Results[1].Count != 2 {
			t.Fatalf("txn: %+v", txn)
		}
		var del api.KVDeleteResponse
		f.must("DELETE", fmt.Sprintf("/v1/kv/cfg/a?cas=%d", put2.Index), nil, &del)
		if del.Deleted != 1 || del.Index <= txn.Index {
			t.Fatalf("delete: %+v", del)
		}
		if st, e := f.do("GET", "/v1/kv/cfg/a", nil, nil); st != 404 || e.Code != api.CodeNotFound {
			t.Fatalf("get of a deleted key: %d %+v", st, e)
		}
		// A value of the largest size passes a follower and the peer port.
		big := make([]byte, api.MaxKVValueLen)
		big[len(big)-1] = 7
		f.must("PUT", "/v1/kv/big", api.KVPutRequest{Value: big}, nil)
		var b api.KVRead
		f.must("GET", "/v1/kv/big", nil, &b)
		if len(b.KV.Value) != api.MaxKVValueLen || b.KV.Value[len(big)-1] != 7 {
			t.Fatalf("the largest value came back as %d bytes", len(b.KV.Value))
		}
		var l api.KVList
		f.must("GET", "/v1/kv?prefix=cfg/&stale", nil, &l)
		if l.Count != 1 || l.KVs[0].Key != "cfg/b" {
			// A stale read may lag; the default read may not.
			f.must("GET", "/v1/kv?prefix=cfg/", nil, &l)
			if l.Count != 1 || l.KVs[0].Key != "cfg/b" {
				t.Fatalf("list: %+v", l)
			}
		}
	})

	t.Run("ephemeral key ends with its session", func(t *testing.T) {
		s := f.session(time.Second, 0)
		var put api.KVPutResponse
		f.must("PUT", "/v1/kv/eph/me", api.KVPutRequest{Value: []byte("x"), Session: s, Ephemeral: true}, &put)
		if put.KV.Session != s {
			t.Fatalf("ephemeral put: %+v", put)
		}
		// No keepalive: the session expires within a few seconds, and the
		// watcher sees the key deleted in that entry.
		st, ev, e, _ := watchOnce(t, f.base, fmt.Sprintf("/v1/kv/eph/me?watch&index=%d&wait=20s", put.Index))
		if st != 200 || len(ev.Events) != 1 || ev.Events[0].Type != "delete" || ev.Events[0].Prev == nil || ev.Events[0].Prev.Session != s {
			t.Fatalf("watch of an ephemeral key: %d %+v %+v", st, ev, e)
		}
		if st, e := f.do("GET", "/v1/kv/eph/me", nil, nil); st != 404 {
			t.Fatalf("ephemeral key after its session: %d %+v", st, e)
		}
	})

	t.Run("fenced write refused after the lock moved", func(t *testing.T) {
		s1, s2 := f.session(time.Minute, 0), f.session(time.Minute, 0)
		a1, st, e := f.acquire("jobs/x", s1, 0)
		if st != 200 {
			t.Fatalf("acquire: %d %+v", st, e)
		}
		g1 := &api.Guard{Lock: "jobs/x", Token: a1.Token}
		f.must("PUT", "/v1/kv/out/x", api.KVPutRequest{Value: []byte("1"), Guard: g1}, nil)
		f.must("POST", "/v1/locks/jobs/x/release", api.SessionRequest{Session: s1}, nil)
		if st, e := f.do("PUT", "/v1/kv/out/x", api.KVPutRequest{Value: []byte("late"), Guard: g1}, nil); st != 409 || e.Code != api.CodeNotHolder {
			t.Fatalf("guarded put on a free lock: %d %+v", st, e)
		}
		if _, st, e := f.acquire("jobs/x", s2, 0); st != 200 {
			t.Fatalf("acquire by the next holder: %d %+v", st, e)
		}
		if st, e := f.do("PUT", "/v1/kv/out/x", api.KVPutRequest{Value: []byte("late"), Guard: g1}, nil); st != 409 || e.Code != api.CodeStaleToken {
			t.Fatalf("guarded put after the lock moved: %d %+v", st, e)
		}
		var got api.KVRead
		f.must("GET", "/v1/kv/out/x", nil, &got)
		if string(got.KV.Value) != "1" {
			t.Fatalf("the refused writes changed the key: %+v", got.KV)
		}
	})

	t.Run("prefix watch across a change of leader", func(t *testing.T) {
		var start api.KVList
		f.must("GET", "/v1/kv?prefix=w/", nil, &start)
		const n = 30
		var mu sync.Mutex
		var seen []api.Event
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			index := start.Index
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				base := c.URL(0)
				st, ev, e, _ := watchOnce(t, base, fmt.Sprintf("/v1/kv?prefix=w/&watch&index=%d&wait=1s", index))
				if st != 200 {
					if st == 410 || st == 400 {
						done <- fmt.Errorf("watch: %d %+v", st, e)
						return
					}
					time.Sleep(50 * time.Millisecond) // an election: ask again with the same index
					continue
				}
				mu.Lock()
				seen = append(seen, ev.Events...)
				mu.Unlock()
				index = ev.Index
			}
		}()
		want := map[string]uint64{}
		for i := range n {
			if i == n/2 {
				l := c.WaitLeader()
				newAPI(t, c, l).must("POST", "/v1/cluster/leader-transfer", nil, nil)
			}
			key := fmt.Sprintf("w/%02d", i)
			for {
				// cas 0: a put retried after an unknown outcome cannot
				// apply twice.
				var put api.KVPutResponse
				st, e := newAPI(t, c, 1).do("PUT", "/v1/kv/"+key, api.KVPutRequest{Value: []byte(key), CAS: new(uint64)}, &put)
				if st == 200 {
					want[key] = put.Index
					break
				}
				if st == 409 && e.Code == api.CodeCASFailed {
					var got api.KVRead
					newAPI(t, c, c.WaitLeader()).must("GET", "/v1/kv/"+key, nil, &got)
					want[key] = got.KV.ModifyIndex
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		servertest.WaitFor(t, 20*time.Second, "the watcher to see every put", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) >= n
		})
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != n {
			var got []string
			for _, e := range seen {
				got = append(got, fmt.Sprintf("%d:%s", e.Index, e.KV.Key))
			}
			t.Fatalf("the watcher saw %d events, want %d once each: %v", len(seen), n, got)
		}
		for i, e := range seen {
			key := fmt.Sprintf("w/%02d", i)
			if e.Type != "put" || e.KV.Key != key || e.Index != want[key] || i > 0 && e.Index <= seen[i-1].Index {
				t.Fatalf("event %d: %+v, want the put of %s at %d", i, e, key, want[key])
			}
		}
	})

	t.Run("watch from a compacted index", func(t *testing.T) {
		l := newAPI(t, c, c.WaitLeader())
		for i := range kvHistory.MinEvents + 5 {
			l.must("PUT", "/v1/kv/fill", api.KVPutRequest{Value: []byte(strconv.Itoa(i))}, nil)
		}
		st, _, e, h := watchOnce(t, f.base, "/v1/kv?prefix=&watch&index=1")
		oldest, _ := strconv.ParseUint(h.Get(api.HeaderOldestIndex), 10, 64)
		if st != 410 || e.Code != api.CodeCompacted || oldest <= 1 {
			t.Fatalf("watch from index 1: %d %+v oldest %q", st, e, h.Get(api.HeaderOldestIndex))
		}
		// From the oldest index named, the watch is answered.
		st, ev, e, _ := watchOnce(t, f.base, fmt.Sprintf("/v1/kv?prefix=&watch&index=%d&keys", oldest))
		if st != 200 || len(ev.Events) == 0 || !slices.IsSortedFunc(ev.Events, func(a, b api.Event) int { return cmp.Compare(a.Index, b.Index) }) {
			t.Fatalf("watch from the oldest index: %d %+v %+v", st, ev, e)
		}
	})
}
