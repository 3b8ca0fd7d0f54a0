package lease_test

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// slowTimers gives Raft timeouts long enough to tell a follower at rate 4
// from one at rate 1 by when it stands for election.
func slowTimers(c *lease.Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 100*time.Millisecond
}

// A follower whose clock runs at rate r runs Raft's timers r times
// faster: its reloaded timeouts are the nominal ones divided by r, and
// with its leader dead it stands for election r times sooner than the
// nominal heartbeat timeout allows. Rate 1 restores the nominal timeouts.
func TestClockRate_MovesRaftTimers(t *testing.T) {
	c := servertest.New(t, 3, slowTimers)
	l := c.WaitLeader()
	f := c.Follower(l)
	fr := c.Nodes[f].Node().Raft()
	const rate = 4.0
	c.Nodes[f].Clock().Set(0, rate)
	rc := fr.ReloadableConfig()
	if want := time.Second / rate; rc.HeartbeatTimeout != want || rc.ElectionTimeout != want {
		t.Fatalf("at rate %v: heartbeat %v, election %v, want both %v", rate, rc.HeartbeatTimeout, rc.ElectionTimeout, want)
	}
	time.Sleep(100 * time.Millisecond) // a heartbeat under the new timer
	c.Crash(l)
	start := time.Now()
	servertest.WaitFor(t, 5*time.Second, "the fast follower to stand for election", func() bool {
		return fr.State() != raft.Follower
	})
	// hashicorp/raft fires the heartbeat timer between one and two
	// timeouts after the last contact: 250-500 ms at rate 4, 1-2 s at 1.
	if took := time.Since(start); took >= time.Second {
		t.Errorf("the follower at rate %v stood for election %v after its leader died, want under the nominal %v", rate, took, time.Second)
	}
	c.Nodes[f].Clock().Set(0, 1)
	if rc := fr.ReloadableConfig(); rc.HeartbeatTimeout != time.Second || rc.ElectionTimeout != time.Second {
		t.Errorf("rate 1: heartbeat %v, election %v, want the nominal 1s", rc.HeartbeatTimeout, rc.ElectionTimeout)
	}
}

// A follower tells its promise as its own clock measures it: at rate r
// the real time left before Raft's reloaded timer fires, times r.
func TestClockRate_PromiseOnTheFollowersClock(t *testing.T) {
	c := servertest.New(t, 3, slowTimers)
	l := c.WaitLeader()
	f := c.Follower(l)
	leader, fn := c.Nodes[l].Node(), c.Nodes[f].Node()
	term := leader.Raft().CurrentTerm()
	const rate = 2.0
	c.Nodes[f].Clock().Set(0, rate)
	c.Isolate(f)
	time.Sleep(200 * time.Millisecond) // the promise runs down, at the follower's rate
	since := time.Since(fn.Raft().LastContact())
	got := fn.PromiseFor(term, leader.ID())
	// Real time left: 1s/2 - since; on the follower's clock twice that.
	want := time.Duration(rate * float64(time.Second/rate-since))
	if d := got - want; d < -30*time.Millisecond || d > 30*time.Millisecond {
		t.Errorf("promise %v after %v without contact at rate %v, want about %v", got, since, rate, want)
	}
	c.Heal(f)
}
