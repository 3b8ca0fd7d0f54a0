package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/internal/servertest"
)

// TestCluster_RaftPartitionNeverTwoLeadersInOneTerm runs Raft through the
// partition the classic modes are tested with ({n1,n2,n3} | {n4,n5}, made
// with the same transport fault hooks) and samples every node's view: no
// two nodes ever lead in the same term, and no two serve (hold a master
// lease) at the same moment; a leader on the minority side may serve only
// until its lease runs out.
func TestCluster_RaftPartitionNeverTwoLeadersInOneTerm(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node")
	}
	c := servertest.New(t, 5)
	sides := [][]int{{0, 1, 2}, {3, 4}}
	split := func(rule mux.Rule) {
		for _, a := range sides[0] {
			for _, b := range sides[1] {
				c.Nodes[a].Faults().Set(c.Nodes[b].ID(), mux.Both, rule)
				c.Nodes[b].Faults().Set(c.Nodes[a].ID(), mux.Both, rule)
			}
		}
	}
	split(mux.Drop)
	cut := time.Now()
	leaders := map[uint64]string{} // term -> leader seen
	var lastMinority time.Time
	for end := cut.Add(4 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		var serving []string
		for i, s := range c.Nodes {
			if ok, _ := s.Node().Leader(); ok && s.Node().Ready(context.Background()) == nil {
				serving = append(serving, s.ID())
				if i >= 3 {
					lastMinority = time.Now()
				}
			}
			r := s.Node().Raft()
			if r.State() != raft.Leader {
				continue
			}
			term := r.CurrentTerm()
			if prev, ok := leaders[term]; ok && prev != s.ID() {
				t.Fatalf("two leaders in term %d: %s and %s", term, prev, s.ID())
			}
			leaders[term] = s.ID()
		}
		if len(serving) > 1 {
			t.Fatalf("%v serve at the same moment", serving)
		}
	}
	if lease := c.Nodes[0].Config().Node.HeartbeatTimeout; lastMinority.Sub(cut) > lease {
		t.Fatalf("the minority side served %v after the split", lastMinority.Sub(cut))
	}
	for _, h := range c.Nodes {
		h.Faults().HealAll()
	}
	c.WaitLeader()
	t.Logf("leaders by term during the partition: %v", leaders)
}
