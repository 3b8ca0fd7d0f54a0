package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// TestCluster_LeaseEndsBeforeAnotherLeaderUnderDelayedAnswers is the case
// that broke lockd's earlier lease rule: one follower's answers reach the
// leader late, then the leader is cut off. Raft's leader lease timeout is
// its heartbeat timeout (less 1ms, see below), so Raft's own step-down
// does not hide anything. In every trial the old leader's master lease
// must end before another node is elected.
//
// Each trial drives the worst case rather than waiting for it:
//   - a reader keeps asking the leader for consistent reads, so that a
//     confirmation round starts as soon as the one before it ends;
//   - the leader is cut off from the late follower right after a message
//     that reached the follower within 100ms of the one before it, so the
//     answer to the earlier message ends a round less than 100ms before
//     the answer to the last one arrives, and the round that starts then
//     is ended by that last answer, sent before the round began (the old
//     rule's flaw: its lease then runs to about cut + delay - 100ms +
//     lease duration, past the follower's promise);
//   - the follower campaigns at the first moment Raft allows: once its
//     heartbeat timeout since its last contact has passed, its heartbeat
//     timeout is reloaded 1ms shorter, which makes hashicorp/raft check its
//     timer at once instead of at a random point up to twice the timeout
//     later (Raft allows no heartbeat timeout below the leader lease
//     timeout, hence the 1ms).
//
// LOCKD_LEASE_TRIALS sets the number of trials (default 3);
// LOCKD_LEASE_RULE=round runs the old rule (--unsafe-debug round-lease;
// go test -tags lockd_unsafe), which this test catches in every trial.
func TestCluster_LeaseEndsBeforeAnotherLeaderUnderDelayedAnswers(t *testing.T) {
	trials := 3
	if s := os.Getenv("LOCKD_LEASE_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOCKD_LEASE_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	c := servertest.New(t, 3, func(nc *lease.Config) {
		nc.LeaderLeaseTimeout = nc.HeartbeatTimeout - time.Millisecond
		leaseRuleFromEnv(t, nc)
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
	previous  time.Duration // the follower's contact before its last one
}

func (o leaseOverlap) bad() bool { return o.newLeader >= 0 && o.newLeader < o.leaseEnd }

func (o leaseOverlap) String() string {
	return fmt.Sprintf("follower's contact before the last at %+dms, old lease until %+dms, new leader at %+dms, overlap %v",
		o.previous.Milliseconds(), o.leaseEnd.Milliseconds(), o.newLeader.Milliseconds(), o.bad())
}

func delayedAnswerTrial(t *testing.T, c *servertest.Cluster, delay time.Duration) leaseOverlap {
	t.Helper()
	l := c.WaitLeader()
	b := c.Follower(l)
	other := 3 - l - b
	old, fb, fc := c.Nodes[l], c.Nodes[b], c.Nodes[other]
	br := fb.Node().Raft()
	nominal := br.ReloadableConfig()
	defer func() {
		if err := br.ReloadConfig(nominal); err != nil {
			t.Errorf("restoring %s's Raft timeouts: %v", fb.ID(), err)
		}
		for _, s := range []int{l, b, other} {
			c.Heal(s)
		}
	}()
	// The third node is cut off from the leader first, so that only the
	// late follower's answers can renew the lease.
	old.Faults().Set(fc.ID(), mux.Both, mux.Drop)
	time.Sleep(200 * time.Millisecond)
	// Everything the follower sends the leader arrives late.
	old.Faults().SetDelay(fb.ID(), mux.In, delay)
	time.Sleep(delay + 100*time.Millisecond)

	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := old.Node().Lock(ctx, "delayed-answers", api.ReadOptions{Consistent: true})
			cancel()
			if err != nil {
				time.Sleep(time.Millisecond) // no leader or lease: do not spin
			}
		}
	}()
	defer func() { close(stop); reader.Wait() }()

	// Cut the leader off from the follower right after a contact that came
	// within 100ms of the one before it.
	last, previous := br.LastContact(), time.Time{}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		if lc := br.LastContact(); lc.After(last) {
			last, previous = lc, last
			if lc.Sub(previous) <= 100*time.Millisecond {
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("%s heard from the leader at no two moments within 100ms of each other in 5s", fb.ID())
		}
	}
	old.Faults().Set(fb.ID(), mux.Out, mux.Blackhole)
	cut := time.Now()

	o := leaseOverlap{newLeader: -1, previous: previous.Sub(cut)}
	hb := nominal.HeartbeatTimeout
	early := nominal
	early.HeartbeatTimeout = hb - time.Millisecond
	forced := false
	deadline := cut.Add(5 * time.Second)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		if left := old.Node().MasterLease(); left > 0 {
			o.leaseEnd = max(o.leaseEnd, now.Add(left).Sub(cut))
		}
		if !forced && now.Sub(br.LastContact()) > hb {
			if err := br.ReloadConfig(early); err != nil {
				t.Fatalf("shortening %s's heartbeat timeout: %v", fb.ID(), err)
			}
			forced = true
		}
		if br.State() == raft.Leader || fc.Node().Raft().State() == raft.Leader {
			o.newLeader = now.Sub(cut)
			break
		}
		time.Sleep(time.Millisecond)
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
		leaseRuleFromEnv(t, nc)
	})
	c.MoveLeadership(0)
	servertest.WaitFor(t, 10*time.Second, "n1 to lead and serve", func() bool { return c.Nodes[0].Node().MasterLease() > 0 })
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
