package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/peerhttp"
)

// peerLeader serves a leader fake's API on a peer port of its own
// (internal/peerhttp), as a node's peer port serves forwarded requests,
// and returns its peer address.
func peerLeader(t *testing.T, svc *fakeService) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := mustNewServer(t, svc, nil)
	go func() { _ = peerhttp.Serve(ln, h, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	return ln.Addr().String()
}

// dialLog is a peer transport's Dial that records the addresses it dials.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) dial(addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return net.DialTimeout("tcp", addr, timeout)
}

func (d *dialLog) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// peerFollower starts a follower whose fake names the leader by id and
// peer address only (as Raft knows it), with a peer transport.
func peerFollower(t *testing.T, id, peer string) (*fakeService, *dialLog, string) {
	t.Helper()
	f := &fakeService{leaderID: id, leaderPeer: peer, members: map[string]string{}}
	d := &dialLog{}
	tr := &peerhttp.Transport{Dial: d.dial}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := testConfig(t, f)
	cfg.NodeID = "n2"
	cfg.PeerTransport = tr
	// Forwarding over HTTP would be a mistake here: make it fail loudly.
	cfg.ForwardClient = &http.Client{Transport: failingTransport{t}}
	ts := httptest.NewServer(New(cfg))
	t.Cleanup(ts.Close)
	return f, d, ts.URL
}

type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("forwarded over HTTP to %s", r.URL)
	return nil, io.ErrUnexpectedEOF
}

// TestForward_ToLeaderPeer checks that a follower sends a forwarded request
// to the leader's peer address as the Service names it (Raft's own record
// of the leader), over the peer transport, with no look-up of the member
// table; and that after a leader change the next request goes to the new
// leader's peer address.
func TestForward_ToLeaderPeer(t *testing.T) {
	a, b := newLeaderFake(), newLeaderFake()
	peerA, peerB := peerLeader(t, a), peerLeader(t, b)
	f, dials, followerURL := peerFollower(t, "n1", peerA)

	status, _, body := do(t, "POST", followerURL+"/v1/locks/a/acquire", `{"session":"s1","wait":"1s"}`, http.Header{api.HeaderWait: {"1s"}})
	if status != http.StatusOK || len(a.Calls()) != 1 || len(b.Calls()) != 0 {
		t.Fatalf("first acquire: %d %s; calls at n1 %v, at n3 %v", status, body, a.Calls(), b.Calls())
	}
	status, _, body = do(t, "POST", followerURL+"/v1/sessions/s1/keepalive", "", nil)
	if status != http.StatusOK || len(a.Calls()) != 2 {
		t.Fatalf("keepalive: %d %s; calls at n1 %v", status, body, a.Calls())
	}

	f.mu.Lock()
	f.leaderID, f.leaderPeer = "n3", peerB
	f.mu.Unlock()
	status, _, body = do(t, "POST", followerURL+"/v1/locks/a/release", `{"session":"s1"}`, nil)
	if status != http.StatusOK || len(b.Calls()) != 1 || len(a.Calls()) != 2 {
		t.Fatalf("release after the leader change: %d %s; calls at n1 %v, at n3 %v", status, body, a.Calls(), b.Calls())
	}
	if got := dials.dialled(); strings.Join(got, ",") != peerA+","+peerB {
		t.Errorf("dialled %v, want [%s %s]: one connection to each leader's peer address", got, peerA, peerB)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.memberHTTP != 0 {
		t.Errorf("the member table was read %d times on the request path", f.memberHTTP)
	}
}

// TestForward_ToLeaderPeerFails checks that a forward to a leader's peer
// address that cannot be reached is answered as before, 503 no_leader
// naming the leader's HTTP host as clients know it: the member table is
// read for the message, once the forward has failed.
func TestForward_ToLeaderPeerFails(t *testing.T) {
	f, _, followerURL := peerFollower(t, "n1", refusingAddr(t))
	f.members["n1"] = "http://127.0.0.1:7400"
	status, hdr, body := do(t, "POST", followerURL+"/v1/locks/a/release", `{"session":"s1"}`, nil)
	var e api.Error
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != http.StatusServiceUnavailable || e.Code != api.CodeNoLeader ||
		e.Message != "cannot reach the leader at 127.0.0.1:7400; retry shortly" || hdr.Get("Retry-After") != "1" {
		t.Fatalf("got %d %s (Retry-After %q), want 503 no_leader naming 127.0.0.1:7400", status, body, hdr.Get("Retry-After"))
	}
}
