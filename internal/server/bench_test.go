package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/servertest"
	"github.com/lockd/lockd/lease"
)

// BenchmarkCycle measures one uncontended acquire and release (two Raft
// entries) on a 3-node in-process cluster, layer by layer: through the
// leader's lease.Node directly (Raft, the lease and the FSM), over HTTP to
// the leader, and over HTTP to a follower that forwards to the leader. The
// differences between the sub-benchmarks are what each layer costs. Each
// runs with both log stores.
func BenchmarkCycle(b *testing.B) {
	for _, store := range []string{lease.LogStoreBolt, lease.LogStoreWAL} {
		b.Run(store, func(b *testing.B) {
			benchCycle(b, servertest.New(b, 3, func(c *lease.Config) { c.LogStore = store }))
		})
	}
}

func benchCycle(b *testing.B, c *servertest.Cluster) {
	leader := c.WaitLeader()
	follower := c.Follower(leader)
	ctx := context.Background()
	node := c.Nodes[leader].Node()

	b.Run("node", func(b *testing.B) {
		s, err := node.CreateSession(ctx, wire.CreateSessionRequest{})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			seq := uint64(2*i + 1)
			if _, err := node.Acquire(ctx, "bench/node", wire.AcquireRequest{Session: s.ID, Seq: seq}); err != nil {
				b.Fatal(err)
			}
			if err := node.Release(ctx, "bench/node", wire.SessionRequest{Session: s.ID, Seq: seq + 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, at := range []struct {
		name string
		i    int
	}{{"http-leader", leader}, {"http-follower", follower}} {
		b.Run(at.name, func(b *testing.B) {
			h := benchHTTP{b: b, base: c.URL(at.i)}
			var s wire.Session
			h.do("POST", "/v1/sessions", wire.CreateSessionRequest{}, &s)
			path := "/v1/locks/bench/" + at.name
			b.ResetTimer()
			for i := range b.N {
				seq := uint64(2*i + 1)
				h.do("POST", path+"/acquire", wire.AcquireRequest{Session: s.ID, Seq: seq}, nil)
				h.do("POST", path+"/release", wire.SessionRequest{Session: s.ID, Seq: seq + 1}, nil)
			}
		})
	}
}

// benchHTTP sends JSON requests the way a plain HTTP client would, over
// one kept-alive connection.
type benchHTTP struct {
	b    *testing.B
	base string
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

func (h benchHTTP) do(method, path string, in, out any) {
	body, err := json.Marshal(in)
	if err != nil {
		h.b.Fatal(err)
	}
	req, err := http.NewRequest(method, h.base+path, bytes.NewReader(body))
	if err != nil {
		h.b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := benchClient.Do(req)
	if err != nil {
		h.b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		h.b.Fatal(fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.b.Fatal(err)
		}
	}
}
