package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
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
		s, err := node.CreateSession(ctx, api.CreateSessionRequest{})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			seq := uint64(2*i + 1)
			if _, err := node.Acquire(ctx, "bench/node", api.AcquireRequest{Session: s.ID, Seq: seq}); err != nil {
				b.Fatal(err)
			}
			if err := node.Release(ctx, "bench/node", api.SessionRequest{Session: s.ID, Seq: seq + 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// 64 workers through the node: what Raft, the lease and the FSM alone
	// sustain, the ceiling of the HTTP rows below.
	b.Run("node-64", func(b *testing.B) {
		b.SetParallelism(64 / runtime.GOMAXPROCS(0))
		var worker atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			name := fmt.Sprintf("bench/node-64/%d", worker.Add(1))
			s, err := node.CreateSession(ctx, api.CreateSessionRequest{})
			if err != nil {
				b.Error(err)
				return
			}
			for seq := uint64(1); pb.Next(); seq += 2 {
				if _, err := node.Acquire(ctx, name, api.AcquireRequest{Session: s.ID, Seq: seq}); err != nil {
					b.Error(err)
					return
				}
				if err := node.Release(ctx, name, api.SessionRequest{Session: s.ID, Seq: seq + 1}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	for _, at := range []struct {
		name string
		i    int
	}{{"http-leader", leader}, {"http-follower", follower}} {
		h := benchHTTP{b: b, base: c.URL(at.i)}
		b.Run(at.name, func(b *testing.B) {
			h.b = b
			cycles(h, "bench/"+at.name, b.N)
		})
		// 64 workers, each with its own session and lock: throughput
		// rather than latency (ns/op is the time per cycle of the whole).
		b.Run(at.name+"-64", func(b *testing.B) {
			h.b = b
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			var worker atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				name := fmt.Sprintf("bench/%s-64/%d", at.name, worker.Add(1))
				var s api.Session
				h.do("POST", "/v1/sessions", api.CreateSessionRequest{}, &s)
				for seq := uint64(1); pb.Next(); seq += 2 {
					h.cycle(name, s.ID, seq)
				}
			})
		})
	}
}

// cycles runs n acquire and release cycles of one session on name.
func cycles(h benchHTTP, name string, n int) {
	var s api.Session
	h.do("POST", "/v1/sessions", api.CreateSessionRequest{}, &s)
	h.b.ResetTimer()
	for i := range n {
		h.cycle(name, s.ID, uint64(2*i+1))
	}
}

// cycle acquires name (wait 0) and releases it, with request numbers seq
// and seq+1.
func (h benchHTTP) cycle(name, session string, seq uint64) {
	h.do("POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session, Seq: seq}, nil)
	h.do("POST", "/v1/locks/"+name+"/release", api.SessionRequest{Session: session, Seq: seq + 1}, nil)
}

// benchHTTP sends JSON requests the way a plain HTTP client would, over
// one kept-alive connection.
type benchHTTP struct {
	b    *testing.B
	base string
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}

func (h benchHTTP) do(method, path string, in, out any) { h.send(method, path, in, nil, out) }

// send is do with the headers hdr, and no body when in is nil.
func (h benchHTTP) send(method, path string, in any, hdr http.Header, out any) {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			h.b.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.base+path, body)
	if err != nil {
		h.b.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := benchClient.Do(req)
	if err != nil {
		h.b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		h.b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.b.Fatal(err)
		}
	}
}
