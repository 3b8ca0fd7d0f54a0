// Package servertest starts in-process lockd clusters for tests: real
// server.Server nodes over TCP on 127.0.0.1, ports chosen by the OS, data in
// the test's temporary directory. It is for tests only.
package servertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
)

// Cluster is an in-process cluster. Nodes[i] is nil while node i is down.
type Cluster struct {
	t     testing.TB
	Nodes []*server.Server
	cfgs  []server.Config
}

// New starts n nodes with a static initial cluster and waits until one
// leads and every node is ready and registered. tune, if given, adjusts
// each node's configuration. The cluster is stopped when the test ends.
func New(t testing.TB, n int, tune ...func(*lease.Config)) *Cluster {
	t.Helper()
	return NewWith(t, n, nil, tune...)
}

// NewWith is New with setup, if not nil, called on each node's server
// configuration (node i from 0) before any starts: for settings beyond the
// lease's, such as TLS.
func NewWith(t testing.TB, n int, setup func(i int, cfg *server.Config), tune ...func(*lease.Config)) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an in-process cluster; skipped under -short")
	}
	c := &Cluster{t: t, Nodes: make([]*server.Server, n), cfgs: make([]server.Config, n)}
	var peers []lease.Peer
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		peerLn, httpLn := mustListen(t, "127.0.0.1:0"), mustListen(t, "127.0.0.1:0")
		peers = append(peers, lease.Peer{ID: id, Addr: peerLn.Addr().String()})
		nc := lease.DefaultConfig()
		nc.ID = id
		nc.DataDir = filepath.Join(t.TempDir(), id)
		nc.NoBootWait = true // fresh nodes have promised nothing yet; Start clears it for restarts
		if os.Getenv("LOCKD_TEST_LOG") == "debug" {
			nc.RaftLogLevel = slog.LevelInfo
		}
		for _, f := range tune {
			f(&nc)
		}
		c.cfgs[i] = server.Config{Node: nc, HTTPListener: httpLn, PeerListener: peerLn,
			HTTPListen: httpLn.Addr().String(), PeerListen: peerLn.Addr().String(),
			UnsafeFaults: true, Logger: Logger(t, id)}
	}
	for i := range n {
		c.cfgs[i].Node.InitialCluster = peers
		if setup != nil {
			setup(i, &c.cfgs[i])
		}
		c.Start(i)
	}
	t.Cleanup(c.closeAll)
	c.WaitLeader()
	return c
}

// Logger logs to the test's output at warn and above, or everything with
// LOCKD_TEST_LOG=debug.
func Logger(t testing.TB, id string) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("LOCKD_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: lvl})).With("test_node", id)
}

func mustListen(t testing.TB, addr string) net.Listener {
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

// ServeEtcd is a setup for NewWith that serves etcd's API on every node,
// on a port the OS picks (server.Server.EtcdAddr names it).
func ServeEtcd(t testing.TB) func(i int, cfg *server.Config) {
	return func(_ int, cfg *server.Config) {
		ln := mustListen(t, "127.0.0.1:0")
		cfg.EtcdListener, cfg.EtcdListen = ln, ln.Addr().String()
	}
}

// EtcdAddrs returns the addresses of etcd's API of the nodes that are up.
func (c *Cluster) EtcdAddrs() []string {
	var out []string
	for _, s := range c.Nodes {
		if s != nil && s.EtcdAddr() != "" {
			out = append(out, s.EtcdAddr())
		}
	}
	return out
}

// Configure changes node i's configuration for its next Start (a new
// metrics registry, say: a registry takes a node's collectors once).
func (c *Cluster) Configure(i int, f func(cfg *server.Config)) { f(&c.cfgs[i]) }

// Start (re)starts node i on its original addresses and data dir.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	cfg := c.cfgs[i]
	if cfg.PeerListener == nil {
		// A port a stopped node just released; retry while it frees up.
		cfg.PeerListener = mustListen(c.t, cfg.PeerListen)
		cfg.HTTPListener = mustListen(c.t, cfg.HTTPListen)
		if cfg.EtcdListen != "" {
			cfg.EtcdListener = mustListen(c.t, cfg.EtcdListen)
		}
	}
	s, err := server.Start(cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", i, err)
	}
	c.cfgs[i].PeerListener, c.cfgs[i].HTTPListener, c.cfgs[i].EtcdListener = nil, nil, nil
	// Only a first start skips the boot wait: a restarted node may have
	// promised a leader not to vote, and waits that promise out (A3).
	c.cfgs[i].Node.NoBootWait = false
	c.Nodes[i] = s
}

// Crash stops node i without a leadership transfer.
func (c *Cluster) Crash(i int) {
	_ = c.Nodes[i].Abort()
	c.Nodes[i] = nil
}

// Stop stops node i gracefully (a leader hands over first).
func (c *Cluster) Stop(i int) error {
	err := c.Nodes[i].Close()
	c.Nodes[i] = nil
	return err
}

func (c *Cluster) closeAll() {
	for i, s := range c.Nodes {
		if s != nil {
			_ = s.Abort()
			c.Nodes[i] = nil
		}
	}
}

// URL returns node i's HTTP base URL.
func (c *Cluster) URL(i int) string { return c.Nodes[i].HTTPURL() }

// URLs returns the HTTP base URLs of the running nodes.
func (c *Cluster) URLs() []string {
	var out []string
	for _, s := range c.Nodes {
		if s != nil {
			out = append(out, s.HTTPURL())
		}
	}
	return out
}

// Isolate cuts node i off from every other node, both ways, through its
// fault hooks; Heal lifts that.
func (c *Cluster) Isolate(i int) {
	for j, s := range c.Nodes {
		if j != i && s != nil {
			c.Nodes[i].Faults().Set(s.ID(), mux.Both, mux.Drop)
		}
	}
}

// Heal lifts every fault rule of node i.
func (c *Cluster) Heal(i int) { c.Nodes[i].Faults().HealAll() }

// WaitLeader waits until exactly one running node serves as leader and
// every running node is ready and listed with its addresses in its own
// member table (so no registration write is still to come), and returns
// the leader's position.
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	var leader int
	WaitFor(c.t, 15*time.Second, "a serving leader", func() bool {
		leader = -1
		for i, s := range c.Nodes {
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

// MoveLeadership makes node i lead: it asks whichever node leads to
// hand leadership to i until i serves as leader. A refusal because i has
// not answered the leader lately (an election just happened, or the
// machine is loaded) is asked again; the test fails after 20 s.
func (c *Cluster) MoveLeadership(i int) {
	c.t.Helper()
	to := c.Nodes[i].ID()
	var last error
	deadline := time.Now().Add(20 * time.Second)
	for {
		l := c.WaitLeader()
		if l == i {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("leadership never moved to %s: last refusal: %v", to, last)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, last = c.Nodes[l].Node().TransferLeadership(ctx, to)
		cancel()
		if last != nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (c *Cluster) allRegistered(s *server.Server) bool {
	for _, o := range c.Nodes {
		if o != nil && !s.Registered(o.ID(), o.PeerAddr(), o.HTTPURL()) {
			return false
		}
	}
	return true
}

// Follower returns the position of a running node other than leader.
func (c *Cluster) Follower(leader int) int {
	for i, s := range c.Nodes {
		if s != nil && i != leader {
			return i
		}
	}
	c.t.Fatal("no follower running")
	return -1
}

// WaitFor polls cond every 10ms until it holds, failing the test after within.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
