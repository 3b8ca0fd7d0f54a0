package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/servertest"
)

// TestForward_FollowsTheLeaderAcrossAChange checks that a follower sends
// what it forwards to the node Raft names leader, at its peer address,
// before and after a leadership transfer: the answer each time comes from
// the leader of the moment (its X-Lockd-Leader), and the acquire's wait,
// said in the X-Lockd-Wait header, is accepted.
func TestForward_FollowsTheLeaderAcrossAChange(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	via := c.Follower(leader)
	h := fwdTester{t: t, base: c.URL(via)}
	var s api.Session
	h.post("/v1/sessions", `{}`, nil, &s)
	if got := h.post("/v1/locks/fw/acquire", `{"session":"`+s.ID+`","wait":"2s","seq":1}`, http.Header{api.HeaderWait: {"2s"}}, nil); got != c.URL(leader) {
		t.Fatalf("the acquire was answered by %q, want the leader %s", got, c.URL(leader))
	}

	next := 3 - leader - via // the third node
	var tr api.TransferResponse
	h.post("/v1/cluster/leader-transfer", `{"to":"`+c.Nodes[next].ID()+`"}`, nil, &tr)
	if tr.Leader.ID != c.Nodes[next].ID() {
		t.Fatalf("transfer to %s made %s leader", c.Nodes[next].ID(), tr.Leader.ID)
	}
	servertest.WaitFor(t, 10*time.Second, "the follower to know the new leader", func() bool {
		_, to := c.Nodes[via].Node().Leader()
		return to.ID == c.Nodes[next].ID() && to.Peer == c.Nodes[next].PeerAddr()
	})
	servertest.WaitFor(t, 10*time.Second, "the new leader to serve", func() bool {
		return serving(c.Nodes[next])
	})
	if got := h.post("/v1/locks/fw/release", `{"session":"`+s.ID+`","seq":2}`, nil, nil); got != c.URL(next) {
		t.Fatalf("the release was answered by %q, want the new leader %s", got, c.URL(next))
	}
}

// fwdTester sends JSON requests for a test.
type fwdTester struct {
	t    *testing.T
	base string
}

// post sends body to path with hdr, fails the test unless the answer is
// 2xx, and decodes it into out. It returns the answer's X-Lockd-Leader.
func (h fwdTester) post(path, body string, hdr http.Header, out any) string {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		h.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("POST %s: decode %q: %v", path, raw, err)
		}
	}
	return resp.Header.Get(api.HeaderLeader)
}
