package lease

import (
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/fsm"
)

// holdingClock is a manual clock that can stop one caller inside Now: the
// next Now after hold() returns the time as it was when called, but only
// once release() is called.
type holdingClock struct {
	mu      sync.Mutex
	now     time.Time
	holding bool
	inside  chan struct{} // closed when the held caller is inside Now
	resume  chan struct{}
}

func (c *holdingClock) Now() time.Time {
	c.mu.Lock()
	v, hold := c.now, c.holding
	c.holding = false
	c.mu.Unlock()
	if hold {
		close(c.inside)
		<-c.resume
	}
	return v
}

func (c *holdingClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *holdingClock) hold() {
	c.mu.Lock()
	c.holding = true
	c.inside, c.resume = make(chan struct{}), make(chan struct{})
	c.mu.Unlock()
}

// A keepalive that reads the clock just before the deadline must not be
// accepted when the expiry sweep lists the session between that reading and
// the keepalive's update: the leader would answer 200 for a session whose
// expiry it is committing.
func TestLeaderTerm_KeepaliveRacingTheSweepIsNotAcceptedForAnExpiringSession(t *testing.T) {
	base := time.Unix(1000, 0)
	clock := &holdingClock{now: base}
	term, f := newTestTerm(clock)
	if res := f.ApplyCommand(1, fsm.Command{Op: fsm.OpCreateSession, Now: base, Session: "s", TTL: 10 * time.Second}); res.Err != nil {
		t.Fatal(res.Err)
	}
	term.track("s", 10*time.Second)
	deadline := base.Add(10 * time.Second)
	clock.set(deadline.Add(-time.Millisecond))
	clock.hold()
	accepted := make(chan bool, 1)
	go func() { accepted <- term.extend("s", 10*time.Second) }()
	select {
	case <-clock.inside:
	case <-time.After(5 * time.Second):
		t.Fatal("the keepalive never read the clock")
	}
	clock.set(deadline.Add(time.Millisecond))
	swept := make(chan []string, 1)
	go func() { swept <- term.expired() }()
	// Give the sweep time to run if nothing stops it, then let the
	// keepalive go on.
	var listed []string
	sweepDone := false
	select {
	case listed = <-swept:
		sweepDone = true
	case <-time.After(200 * time.Millisecond):
	}
	close(clock.resume)
	var ok bool
	select {
	case ok = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the keepalive did not finish")
	}
	if !sweepDone {
		select {
		case listed = <-swept:
		case <-time.After(5 * time.Second):
			t.Fatal("the sweep did not finish")
		}
	}
	if ok && len(listed) > 0 {
		t.Fatalf("keepalive accepted for session %v that the sweep handed to expire", listed)
	}
	if !ok && len(listed) == 0 {
		t.Fatal("keepalive refused although the sweep did not list the session")
	}
}

// Once the sweep hands a session to expire, no keepalive revives it, even
// one whose clock reading lies before the old deadline (a clock set back),
// and a later sweep lists it again so a failed expiry is retried.
func TestLeaderTerm_SessionBeingExpiredStaysRefused(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, f := newTestTerm(clock)
	f.ApplyCommand(1, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "s", TTL: 5 * time.Second})
	term.track("s", 5*time.Second)
	clock.advance(5 * time.Second)
	if got := term.expired(); len(got) != 1 {
		t.Fatalf("expired() = %v, want [s]", got)
	}
	clock.advance(-time.Minute)
	if term.extend("s", 5*time.Second) {
		t.Fatal("a keepalive revived a session handed to expire")
	}
	if got := term.expired(); len(got) != 1 {
		t.Fatalf("second sweep = %v, want [s] again for the retry", got)
	}
	term.forget("s")
	if term.extend("s", 5*time.Second) {
		t.Fatal("after forget the id is unknown, and extend must not start it afresh")
	}
}
