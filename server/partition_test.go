package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// TestCluster_RaftPartitionNeverTwoLeadersInOneTerm splits a 5-node
// cluster into 2 | 3, once with the leader on the minority side and once
// with two followers there, and samples every node's view: no two nodes
// lead in the same term, no two serve under a master lease at the same
// moment, and the minority stops serving within one master lease of the
// split. With the leader cut off, it must stop serving before a new leader
// is even elected, and the majority must elect one that serves; with the
// leader in the majority, it goes on serving in its term.
//
// Raft's own step-down is set to its latest (LeaderLeaseTimeout =
// HeartbeatTimeout), after the master lease ends, so that the lease is what
// stops the old leader: TestCluster_RaftPartitionUnsafeStaleReadsIsCaught
// shows that the checks see a leader that serves past its lease.
func TestCluster_RaftPartitionNeverTwoLeadersInOneTerm(t *testing.T) {
	for _, leaderCut := range []bool{true, false} {
		t.Run(fmt.Sprintf("leader_in_minority=%v", leaderCut), func(t *testing.T) {
			p := partition(t, leaderCut, nil)
			t.Logf("leaders by term: %v; minority served until %v after the split (lease %v); new leader elected at %v, serving at %v",
				p.leaders, p.minorityLastServed, p.leaseDur, p.newLeaderElected, p.newLeaderServed)
			if p.twoLeaders != "" {
				t.Fatal(p.twoLeaders)
			}
			if p.twoServing != "" {
				t.Fatal(p.twoServing)
			}
			if bound := p.leaseDur + splitTolerance; p.minorityLastServed > bound {
				t.Fatalf("the minority side served %v after the split; its master lease is %v", p.minorityLastServed, p.leaseDur)
			}
			if !leaderCut {
				if !p.leaderServesAtEnd {
					t.Fatal("the leader on the majority side no longer serves in its term")
				}
				if p.newLeaderElected >= 0 {
					t.Fatalf("a new leader was elected %v after the split although the leader kept its majority", p.newLeaderElected)
				}
				return
			}
			if p.newLeaderServed < 0 {
				t.Fatal("the majority never elected a leader that serves: the failover was not exercised")
			}
			if p.minorityLastServed >= p.newLeaderElected {
				t.Fatalf("the cut-off leader served until %v after the split, the majority elected a new leader at %v",
					p.minorityLastServed, p.newLeaderElected)
			}
		})
	}
}

// splitTolerance covers the time the split takes to set up and the
// sampling's own delays. The wide LeaseMargin partition uses keeps the
// master lease's end far enough (150ms) before Raft's own step-down for
// the bound to separate them.
const splitTolerance = 75 * time.Millisecond

// partitionRun is what partition observed. Durations are since the split
// began; -1 means never.
type partitionRun struct {
	leaseDur           time.Duration
	leaders            map[uint64]string // term -> Raft leader seen
	twoLeaders         string            // first moment two nodes led one term
	twoServing         string            // first moment two nodes served
	minorityLastServed time.Duration     // last sample a minority node served
	newLeaderElected   time.Duration     // first sample a majority node led a later term
	newLeaderServed    time.Duration     // first sample that node served
	leaderServesAtEnd  bool              // the first leader serves, in its term, at the end
}

// partition starts 5 nodes, splits them 2 | 3 with the leader on the
// minority side (leaderCut) or not, and samples every node every few
// milliseconds until well after a new leader would have been elected.
// tune, if not nil, changes every node's configuration further.
func partition(t *testing.T, leaderCut bool, tune func(*lease.Config)) partitionRun {
	if testing.Short() {
		t.Skip("multi-node")
	}
	c := servertest.New(t, 5, func(nc *lease.Config) {
		nc.LeaderLeaseTimeout = nc.HeartbeatTimeout
		nc.LeaseMargin = 150 * time.Millisecond
		if tune != nil {
			tune(nc)
		}
	})
	leader := c.WaitLeader()
	firstTerm := c.Nodes[leader].Node().Raft().CurrentTerm()
	nc := c.Nodes[leader].Config().Node
	p := partitionRun{
		leaseDur:           time.Duration(float64(nc.HeartbeatTimeout)*(1-nc.MaxClockDrift)) - nc.LeaseMargin,
		leaders:            map[uint64]string{},
		minorityLastServed: -1, newLeaderElected: -1, newLeaderServed: -1,
	}
	minority := map[int]bool{}
	if leaderCut {
		minority[leader] = true
	}
	for i := range c.Nodes {
		if len(minority) < 2 && i != leader {
			minority[i] = true
		}
	}

	cut := time.Now()
	for a := range c.Nodes {
		for b := range c.Nodes {
			if minority[a] && !minority[b] {
				c.Nodes[a].Faults().Set(c.Nodes[b].ID(), mux.Both, mux.Drop)
				c.Nodes[b].Faults().Set(c.Nodes[a].ID(), mux.Both, mux.Drop)
			}
		}
	}
	t.Cleanup(func() {
		for _, s := range c.Nodes {
			if s != nil {
				s.Faults().HealAll()
			}
		}
	})
	newLeader := -1
	for {
		at := time.Since(cut)
		if at > 10*time.Second || at > 3*time.Second && (!leaderCut || p.newLeaderServed >= 0 && at > p.newLeaderServed+time.Second) {
			break
		}
		var servingNow []string
		for i, s := range c.Nodes {
			at := time.Since(cut)
			if serving(s) {
				servingNow = append(servingNow, s.ID())
				if minority[i] {
					p.minorityLastServed = at
				}
				if i == newLeader && p.newLeaderServed < 0 {
					p.newLeaderServed = at
				}
			}
			r := s.Node().Raft()
			if r.State() != raft.Leader {
				continue
			}
			term := r.CurrentTerm()
			if prev, ok := p.leaders[term]; ok && prev != s.ID() && p.twoLeaders == "" {
				p.twoLeaders = fmt.Sprintf("%s and %s both led term %d, %v after the split", prev, s.ID(), term, at)
			}
			p.leaders[term] = s.ID()
			if !minority[i] && term > firstTerm && newLeader < 0 {
				newLeader, p.newLeaderElected = i, at
			}
		}
		if len(servingNow) > 1 && p.twoServing == "" {
			p.twoServing = fmt.Sprintf("%v served at the same moment, %v after the split", servingNow, time.Since(cut))
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.leaderServesAtEnd = serving(c.Nodes[leader]) && c.Nodes[leader].Node().Raft().CurrentTerm() == firstTerm
	return p
}
