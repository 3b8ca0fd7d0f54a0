package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockd/lockd/test/servertest"
)

// /v1/cluster counts the master-lease renewals that failed: none while
// the leader reaches a quorum, some once it is cut off from it.
func TestCluster_CountsFailedLeaseRenewals(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	node := c.Nodes[leader].Node()
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond) // a few renewals
	if cl, err := node.Cluster(ctx); err != nil || cl.MasterLeaseFailures != 0 {
		t.Fatalf("healthy leader: %d failed renewals (%v), want 0", cl.MasterLeaseFailures, err)
	}
	// A leader cut off fails the renewal in flight, unless Raft tells it
	// first that it no longer leads; a few cuts make one fail.
	failures := func() (sum uint64) {
		for _, n := range c.Nodes {
			cl, _ := n.Node().Cluster(ctx)
			sum += cl.MasterLeaseFailures
		}
		return sum
	}
	for cut := 0; cut < 10 && failures() == 0; cut++ {
		l := c.WaitLeader()
		c.Isolate(l)
		time.Sleep(time.Second)
		c.Heal(l)
	}
	if failures() == 0 {
		t.Fatal("ten leaders cut off from their quorum, and no failed renewal counted")
	}
}
