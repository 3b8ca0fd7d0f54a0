package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

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
	h := fwdClient{b: b, base: c.URL(c.Follower(leader))}
	var s api.Session
	h.do("POST", "/v1/sessions", api.CreateSessionRequest{}, nil, &s)

	b.Run("keepalive", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		for b.Loop() {
			h.do("POST", "/v1/sessions/"+s.ID+"/keepalive", nil, nil, nil)
		}
	})
	b.Run("check", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		for b.Loop() {
			h.do("POST", "/v1/locks/bench/check/check", api.CheckRequest{Token: 1}, nil, nil)
		}
	})
	b.Run("acquire-release", func(b *testing.B) {
		h.b = b
		b.ReportAllocs()
		wait := http.Header{"X-Lockd-Wait": {"1s"}}
		seq := uint64(1)
		for b.Loop() {
			h.do("POST", "/v1/locks/bench/fwd/acquire", api.AcquireRequest{Session: s.ID, Seq: seq, Wait: api.Duration(1e9)}, wait, nil)
			h.do("POST", "/v1/locks/bench/fwd/release", api.SessionRequest{Session: s.ID, Seq: seq + 1}, nil, nil)
			seq += 2
		}
	})
}

// fwdClient sends JSON requests over one kept-alive connection.
type fwdClient struct {
	b    *testing.B
	base string
}

func (h fwdClient) do(method, path string, in any, hdr http.Header, out any) {
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
