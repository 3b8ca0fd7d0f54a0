package lease_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// seedState returns a state whose entries end at index 1004: session s1
// created at 1001 holds lock a (token 1002), a member of another cluster
// is in the member table, and there is an admin ACL token acc1.
func seedState(t *testing.T) []byte {
	t.Helper()
	f := fsm.New()
	cmds := []fsm.Command{
		{Op: fsm.OpCreateSession, Session: "s1", TTL: 10 * time.Second},
		{Op: fsm.OpAcquire, Session: "s1", Name: "a"},
		{Op: fsm.OpSetMember, Member: &fsm.Member{ID: "old", Peer: "192.0.2.1:7401", HTTP: "http://192.0.2.1:7400"}},
		{Op: fsm.OpCreateToken, ACLToken: &acl.Token{AccessorID: "acc1", Hash: strings.Repeat("ab", 32), Admin: true}},
	}
	for i, c := range cmds {
		c.Now = time.Now()
		if r := f.ApplyCommand(uint64(1001+i), c); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	b, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeed_ClusterStartsFromTheStateAndGrantsAboveIt(t *testing.T) {
	state := seedState(t)
	for _, store := range []string{lease.LogStoreWAL, lease.LogStoreBolt} {
		t.Run(store, func(t *testing.T) {
			c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
				idx, err := lease.Seed(cfg.Node.DataDir, cfg.Node.InitialCluster, state, time.Now(), 0)
				if err != nil || idx != 1004 {
					t.Fatalf("seed: index %d, %v", idx, err)
				}
			}, func(cfg *lease.Config) { cfg.LogStore = store })
			for i, s := range c.Nodes {
				f := s.Node().FSM()
				if l := f.Lock("a"); len(l.Holders) != 1 || l.Holders[0].Session != "s1" || l.Holders[0].Token != 1002 {
					t.Fatalf("node %d: lock a %+v", i, l)
				}
				if toks := f.Tokens(); len(toks) != 1 || toks[0].AccessorID != "acc1" {
					t.Fatalf("node %d: ACL tokens %+v", i, toks)
				}
				for _, m := range f.Members() {
					if m.ID == "old" {
						t.Fatalf("node %d keeps the old cluster's member %+v", i, m)
					}
				}
			}
			// The session keeps its id: a keepalive by it is accepted.
			resp, err := http.Post(c.URL(0)+"/v1/sessions/s1/keepalive", "", nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("keepalive of s1: %v %v", resp, err)
			}
			resp.Body.Close()
			first := lockToken(t, c, "b")
			if first <= 1004 {
				t.Fatalf("first token of the seeded cluster %d; want above the state's index 1004", first)
			}
			// After a restart of every node the log goes on above the snapshot.
			for i := range c.Nodes {
				if err := c.Stop(i); err != nil {
					t.Fatal(err)
				}
			}
			for i := range c.Nodes {
				c.Start(i)
			}
			c.WaitLeader()
			if again := lockToken(t, c, "c"); again <= first {
				t.Fatalf("token after a restart %d; want above %d", again, first)
			}
			if l := c.Nodes[0].Node().FSM().Lock("b"); len(l.Holders) != 1 || l.Holders[0].Token != first {
				t.Fatalf("lock b after a restart: %+v, want token %d", l, first)
			}
		})
	}
}

func TestSeed_FloorRaisesTheFirstIndex(t *testing.T) {
	state := seedState(t)
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		idx, err := lease.Seed(cfg.Node.DataDir, cfg.Node.InitialCluster, state, time.Now(), 5000)
		if err != nil || idx != 5000 {
			t.Fatalf("seed: index %d, %v", idx, err)
		}
	})
	if tok := lockToken(t, c, "b"); tok <= 5000 {
		t.Fatalf("first token %d; want above the floor 5000", tok)
	}
	if l := c.Nodes[0].Node().FSM().Lock("a"); len(l.Holders) != 1 || l.Holders[0].Token != 1002 {
		t.Fatalf("lock a: %+v", l)
	}
}

// TestSeed_OneNodeThenJoins seeds one node alone; a node with an empty
// data dir then joins it and receives the state from it.
func TestSeed_OneNodeThenJoins(t *testing.T) {
	state := seedState(t)
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		if _, err := lease.Seed(cfg.Node.DataDir, cfg.Node.InitialCluster, state, time.Now(), 0); err != nil {
			t.Fatal(err)
		}
	})
	nc := lease.DefaultConfig()
	nc.ID, nc.DataDir, nc.Join, nc.NoBootWait = "n2", filepath.Join(t.TempDir(), "n2"), c.URL(0), true
	s2, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", Logger: servertest.Logger(t, "n2")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Abort() })
	servertest.WaitFor(t, 15*time.Second, "n2 to join and hold the seeded state", func() bool {
		l := s2.Node().FSM().Lock("a")
		return len(l.Holders) == 1 && l.Holders[0].Token == 1002 && len(c.Nodes[0].Node().Raft().GetConfiguration().Configuration().Servers) == 2
	})
	if tok := lockToken(t, c, "b"); tok <= 1004 {
		t.Fatalf("first token %d; want above the state's index 1004", tok)
	}
}

// lockToken takes the lock name with a new session and returns its token.
func lockToken(t *testing.T, c *servertest.Cluster, name string) uint64 {
	t.Helper()
	cl, err := client.New(c.URLs()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.NewSession(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m := client.NewMutex(s, name)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return m.Token()
}

func TestSeed_Refuses(t *testing.T) {
	state := seedState(t)
	voters := []lease.Peer{{ID: "n1", Addr: "127.0.0.1:7401"}}
	used := t.TempDir()
	if _, err := lease.Seed(used, voters, state, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	walUsed := t.TempDir()
	if err := os.Mkdir(filepath.Join(walUsed, "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		dir    string
		voters []lease.Peer
		state  []byte
		want   error
	}{
		{"a seeded data dir", used, voters, state, lease.ErrHasState},
		{"a data dir with a log", walUsed, voters, state, lease.ErrHasState},
		{"a state that is not one", t.TempDir(), voters, []byte(`{"version":99}`), fsm.ErrBadSnapshot},
		{"an empty state", t.TempDir(), voters, mustEmpty(t), fsm.ErrBadSnapshot},
		{"no voters", t.TempDir(), nil, state, nil},
		{"a repeated voter", t.TempDir(), append(voters, lease.Peer{ID: "n1", Addr: "127.0.0.1:7411"}), state, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lease.Seed(tc.dir, tc.voters, tc.state, time.Now(), 0)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v; want %v", err, tc.want)
			}
			if tc.dir != used && tc.dir != walUsed {
				if has, _, _ := lease.HasState(tc.dir); has {
					t.Fatal("a refused seed left Raft state behind")
				}
			}
		})
	}
}

func mustEmpty(t *testing.T) []byte {
	b, err := fsm.New().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
