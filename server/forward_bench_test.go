package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/servertest"
)

// BenchmarkForward measures requests that a follower of a 3-node
// in-process cluster forwards to the leader, one at a time, so that what
// the follower spends on each shows beside what the leader does:
//
//   - keepalive: no body, no Raft entry; the leader's work is a look-up,
//     so forwarding is most of the cost.
//   - check: a small JSON body, no Raft entry.
//   - acquire-release: a blocking acquire ("wait":"1s", granted at once)
//     and its release, two Raft entries; the acquire says its wait in the
//     X-Lockd-Wait header too, as the client library does.
//
// A CPU profile of it (-cpuprofile) shows what the follower's path costs:
// see BENCHMARKS.md, "Forwarding by node id".
func BenchmarkForward(b *testing.B) {
	c := servertest.New(b, 3)
	leader := c.WaitLeader()
	h := benchHTTP{b: b, base: c.URL(c.Follower(leader))}
	var s api.Session
	h.send("POST", "/v1/sessions", api.CreateSessionRequest{}, nil, &s)

	b.Run("keepalive", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		for b.Loop() {
			h.send("POST", "/v1/sessions/"+s.ID+"/keepalive", nil, nil, nil)
		}
	})
	b.Run("check", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		for b.Loop() {
			h.send("POST", "/v1/locks/bench/check/check", api.CheckRequest{Token: 1}, nil, nil)
		}
	})
	b.Run("acquire-release", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		wait := http.Header{"X-Lockd-Wait": {"1s"}}
		seq := uint64(1)
		for b.Loop() {
			h.send("POST", "/v1/locks/bench/fwd/acquire", api.AcquireRequest{Session: s.ID, Seq: seq, Wait: api.Duration(time.Second)}, wait, nil)
			h.send("POST", "/v1/locks/bench/fwd/release", api.SessionRequest{Session: s.ID, Seq: seq + 1}, nil, nil)
			seq += 2
		}
	})
}
