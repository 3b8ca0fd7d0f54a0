package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// TestRegister_NewHTTPAddress checks that a node that comes back with
// another HTTP address puts it in the member table: a follower by asking
// the leader over the peer port, a leader (the only node) by adding
// itself. servertest's WaitLeader waits until every node's member table
// lists every node's current addresses.
func TestRegister_NewHTTPAddress(t *testing.T) {
	moveHTTP := func(c *servertest.Cluster, i int) {
		t.Helper()
		peer := c.Nodes[i].PeerAddr()
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
		c.Configure(i, func(cfg *server.Config) {
			var err error
			if cfg.HTTPListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			cfg.HTTPListen = cfg.HTTPListener.Addr().String()
			servertest.WaitFor(t, 10*time.Second, "the peer port to be free", func() bool {
				cfg.PeerListener, err = net.Listen("tcp", peer)
				return err == nil
			})
		})
		c.Start(i)
	}
	t.Run("follower", func(t *testing.T) {
		c := servertest.New(t, 3)
		leader := c.WaitLeader()
		f := c.Follower(leader)
		old := c.URL(f)
		moveHTTP(c, f)
		if c.URL(f) == old {
			t.Fatalf("the node came back on its old HTTP address %s", old)
		}
		leader = c.WaitLeader()
		if !c.Nodes[leader].Registered(c.Nodes[f].ID(), c.Nodes[f].PeerAddr(), c.URL(f)) {
			t.Fatalf("the leader's member table lacks %s at %s", c.Nodes[f].ID(), c.URL(f))
		}
	})
	t.Run("leader", func(t *testing.T) {
		c := servertest.New(t, 1)
		old := c.URL(0)
		moveHTTP(c, 0)
		if c.URL(0) == old {
			t.Fatalf("the node came back on its old HTTP address %s", old)
		}
		c.WaitLeader()
	})
}
