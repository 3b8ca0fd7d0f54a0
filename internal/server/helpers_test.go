package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/lease"
)

// testCluster is an in-process cluster of Servers over real TCP on
// 127.0.0.1, with ports chosen by the OS.
type testCluster struct {
	t     *testing.T
	nodes []*Server // nil while a node is down
	cfgs  []Config
}

// mustNewCluster starts n nodes with a static initial cluster and waits
// for a leader that serves. tune, if given, adjusts each node's config.
func mustNewCluster(t *testing.T, n int, tune ...func(*lease.Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: make([]*Server, n), cfgs: make([]Config, n)}
	var peers []lease.Peer
	httpAddrs := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		peerLn := mustListen(t, "127.0.0.1:0")
		httpLn := mustListen(t, "127.0.0.1:0")
		peers = append(peers, lease.Peer{ID: id, Addr: peerLn.Addr().String()})
		httpAddrs[i] = httpLn.Addr().String()
		nc := lease.DefaultConfig()
		nc.ID = id
		nc.DataDir = filepath.Join(t.TempDir(), id)
		nc.NoBootWait = true // fresh nodes have promised nothing yet
		if os.Getenv("LOCKD_TEST_LOG") == "debug" {
			nc.RaftLogLevel = slog.LevelInfo
		}
		for _, f := range tune {
			f(&nc)
		}
		c.cfgs[i] = Config{Node: nc, HTTPListener: httpLn, PeerListener: peerLn,
			HTTPListen: httpAddrs[i], PeerListen: peerLn.Addr().String(), UnsafeFaults: true, Logger: testLogger(t, id)}
	}
	for i := range n {
		c.cfgs[i].Node.InitialCluster = peers
		c.start(i)
	}
	t.Cleanup(c.closeAll)
	c.waitLeader()
	return c
}

func mustListen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	return ln
}

// testLogger logs to the test's output at warn and above, or everything
// with LOCKD_TEST_LOG=debug.
func testLogger(t *testing.T, id string) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("LOCKD_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: lvl})).With("test_node", id)
}

// start (re)starts node i on its original addresses and data dir.
func (c *testCluster) start(i int) {
	c.t.Helper()
	cfg := c.cfgs[i]
	if cfg.PeerListener == nil {
		cfg.PeerListener = mustListenRetry(c.t, cfg.PeerListen)
		cfg.HTTPListener = mustListenRetry(c.t, cfg.HTTPListen)
	}
	s, err := Start(cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", i, err)
	}
	c.cfgs[i].PeerListener, c.cfgs[i].HTTPListener = nil, nil
	c.nodes[i] = s
}

// mustListenRetry listens on a port a stopped node just released.
func mustListenRetry(t *testing.T, addr string) net.Listener {
	t.Helper()
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln
		}
	}
	t.Fatalf("listen %s: %v", addr, err)
	return nil
}

// crash stops node i without a leadership transfer.
func (c *testCluster) crash(i int) {
	c.nodes[i].Abort()
	c.nodes[i] = nil
}

func (c *testCluster) closeAll() {
	for i, s := range c.nodes {
		if s != nil {
			s.Abort()
			c.nodes[i] = nil
		}
	}
}

// waitLeader waits until exactly one running node serves as leader and
// every running node is ready (knows where to forward), and returns the
// leader's position.
func (c *testCluster) waitLeader() int {
	c.t.Helper()
	var leader int
	waitFor(c.t, 10*time.Second, "a serving leader", func() bool {
		leader = -1
		for i, s := range c.nodes {
			if s == nil {
				continue
			}
			if s.Node().Ready(context.Background()) != nil || !c.allRegistered(s) {
				return false
			}
			if ok, _ := s.Node().Leader(); ok {
				if leader >= 0 {
					return false
				}
				leader = i
			}
		}
		return leader >= 0
	})
	return leader
}

// allRegistered reports whether s's member table lists every running node
// with its addresses, so that no registration write is still to come.
func (c *testCluster) allRegistered(s *Server) bool {
	for _, o := range c.nodes {
		if o != nil && !s.registeredIn(o.ID(), o.PeerAddr(), o.HTTPURL()) {
			return false
		}
	}
	return true
}

// follower returns the position of a running node other than the leader.
func (c *testCluster) follower(leader int) int {
	for i, s := range c.nodes {
		if s != nil && i != leader {
			return i
		}
	}
	c.t.Fatal("no follower running")
	return -1
}

func (c *testCluster) api(i int) *api { return &api{t: c.t, base: c.nodes[i].HTTPURL()} }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// api is a minimal HTTP client for tests: the real client library lives in
// client/, and these tests must not depend on it.
type api struct {
	t    *testing.T
	base string
}

// do sends a JSON request and decodes a JSON response into out (on 2xx).
// It returns the status and, for errors, the error body.
func (a *api) do(method, path string, in, out any) (int, wire.Error) {
	a.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			a.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, wire.Error{Code: "transport", Message: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e wire.Error
		json.Unmarshal(raw, &e)
		if s := resp.Header.Get("Retry-After"); s != "" {
			n, _ := strconv.Atoi(s)
			e.RetryAfter = time.Duration(n) * time.Second
		}
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, wire.Error{}
}

// must sends a request that has to succeed.
func (a *api) must(method, path string, in, out any) {
	a.t.Helper()
	if st, e := a.do(method, path, in, out); st >= 300 || st == 0 {
		a.t.Fatalf("%s %s: %d %s: %s", method, path, st, e.Code, e.Message)
	}
}

func (a *api) session(ttl, delay time.Duration) string {
	a.t.Helper()
	d := wire.Duration(delay)
	var s wire.Session
	a.must("POST", "/v1/sessions", wire.CreateSessionRequest{TTL: wire.Duration(ttl), LockDelay: &d}, &s)
	return s.ID
}

func (a *api) acquire(name, session string, wait time.Duration) (wire.AcquireResponse, int, wire.Error) {
	a.t.Helper()
	var r wire.AcquireResponse
	st, e := a.do("POST", "/v1/locks/"+name+"/acquire", wire.AcquireRequest{Session: session, Wait: wire.Duration(wait)}, &r)
	return r, st, e
}

func (a *api) cluster() wire.Cluster {
	a.t.Helper()
	var c wire.Cluster
	a.must("GET", "/v1/cluster", nil, &c)
	return c
}
