package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/internal/servertest"
	"github.com/lockd/lockd/lease"
)

// TestCluster_LeaseEndsBeforeAnotherLeaderUnderDelayedAnswers is the case
// that broke lockd's earlier lease rule: one follower's answers reach the
// leader late, then the leader is cut off. Raft's leader lease timeout
// equals its heartbeat timeout, so Raft's own step-down does not hide
// anything. In every trial the old leader's master lease must end before
// another node is elected.
//
// LOCKD_LEASE_TRIALS sets the number of trials (default 8);
// LOCKD_LEASE_RULE=round runs the old rule (--unsafe-debug round-lease),
// which this test is expected to catch in some trials.
func TestCluster_LeaseEndsBeforeAnotherLeaderUnderDelayedAnswers(t *testing.T) {
	trials := 8
	if s := os.Getenv("LOCKD_LEASE_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOCKD_LEASE_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	roundRule := os.Getenv("LOCKD_LEASE_RULE") == "round"
	c := servertest.New(t, 3, func(nc *lease.Config) {
		nc.LeaderLeaseTimeout = nc.HeartbeatTimeout
		nc.Unsafe.RoundLease = roundRule
	})
	const delay = 380 * time.Millisecond
	bad := 0
	for trial := range trials {
		overlap := delayedAnswerTrial(t, c, delay)
		t.Logf("trial %d: %s", trial, overlap)
		if overlap.bad() {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d trials: the old leader's master lease ran past the election of another leader", bad, trials)
	}
}

// leaseOverlap is what one trial saw, in times after the leader was cut
// off from the follower whose answers were late.
type leaseOverlap struct {
	leaseEnd  time.Duration // the furthest end of the old leader's lease seen
	newLeader time.Duration // when another node became Raft leader; <0: never
}

func (o leaseOverlap) bad() bool { return o.newLeader >= 0 && o.newLeader < o.leaseEnd }

func (o leaseOverlap) String() string {
	return fmt.Sprintf("old lease until %+dms, new leader at %+dms, overlap %v",
		o.leaseEnd.Milliseconds(), o.newLeader.Milliseconds(), o.bad())
}

func delayedAnswerTrial(t *testing.T, c *servertest.Cluster, delay time.Duration) leaseOverlap {
	t.Helper()
	l := c.WaitLeader()
	b := c.Follower(l)
	other := 3 - l - b
	old, fb, fc := c.Nodes[l], c.Nodes[b], c.Nodes[other]
	// The third node is cut off from the leader first, so that only the
	// late follower's answers can renew the lease.
	old.Faults().Set(fc.ID(), mux.Both, mux.Drop)
	time.Sleep(200 * time.Millisecond)
	// Everything the follower sends the leader arrives late. Once the delay
	// line is full, the leader is cut off from it just after it heard from
	// the leader: its promise runs from then, and the answer to that last
	// message is still on its way to the leader.
	old.Faults().SetDelay(fb.ID(), mux.In, delay)
	time.Sleep(delay + 100*time.Millisecond)
	before := fb.Node().Raft().LastContact()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		if fb.Node().Raft().LastContact().After(before) {
			break
		}
	}
	old.Faults().Set(fb.ID(), mux.Out, mux.Blackhole)
	cut := time.Now()

	var o leaseOverlap
	o.newLeader = -1
	deadline := cut.Add(5 * time.Second)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		if left := old.Node().MasterLease(); left > 0 {
			o.leaseEnd = max(o.leaseEnd, now.Add(left).Sub(cut))
		}
		if fb.Node().Raft().State() == raft.Leader || fc.Node().Raft().State() == raft.Leader {
			o.newLeader = now.Sub(cut)
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, s := range []int{l, b, other} {
		c.Heal(s)
	}
	return o
}

// Nodes of one cluster may run with different heartbeat timeouts: a leader
// with a long one must not count on followers' promises as long as its own
// (the old rule did, and got a lease three times longer than any promise
// behind it). Each follower reports what is left of its own promise.
// LOCKD_LEASE_RULE=round runs the old rule, which this test fails.
func TestCluster_LeaseNeverOutrunsTheFollowersShorterPromises(t *testing.T) {
	const long, short = time.Second, 300 * time.Millisecond
	c := servertest.New(t, 3, func(nc *lease.Config) {
		nc.HeartbeatTimeout, nc.ElectionTimeout, nc.LeaderLeaseTimeout = short, short, short
		if nc.ID == "n1" {
			nc.HeartbeatTimeout, nc.ElectionTimeout = long, long
		}
		nc.Unsafe.RoundLease = os.Getenv("LOCKD_LEASE_RULE") == "round"
	})
	l := c.WaitLeader()
	if c.Nodes[l].ID() != "n1" {
		n1 := c.Nodes[0]
		if _, err := c.Nodes[l].Node().TransferLeadership(context.Background(), n1.ID()); err != nil {
			t.Fatalf("leadership transfer to n1: %v", err)
		}
		servertest.WaitFor(t, 10*time.Second, "n1 to lead and serve", func() bool { return n1.Node().MasterLease() > 0 })
	}
	var longest time.Duration
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		longest = max(longest, c.Nodes[0].Node().MasterLease())
	}
	if longest == 0 {
		t.Fatal("n1 never held a master lease")
	}
	if longest > short {
		t.Fatalf("n1 (heartbeat timeout %v) held a master lease of %v; its followers promise at most %v", long, longest, short)
	}
	t.Logf("longest master lease seen on n1: %v (followers' timeout %v, its own %v)", longest, short, long)
}
