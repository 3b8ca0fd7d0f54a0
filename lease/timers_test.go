package lease

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// manualClock only moves when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// leadingEngine is an engine that leads in term 1 and does nothing else.
type leadingEngine struct{ engine }

func (leadingEngine) state() (bool, uint64) { return true, 1 }

func newTestTerm(clock Clock) (*leaderTerm, *fsm.FSM) {
	f := fsm.New()
	n := &Node{cfg: validConfig(), clock: clock, fsm: f, eng: leadingEngine{}}
	return newLeaderTerm(n, 1), f
}

func TestLeaderTerm_ExtendRefusesAfterDeadline(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, _ := newTestTerm(clock)
	if term.extend("s", 10*time.Second) {
		t.Fatal("extend accepted for a session the leader does not track")
	}
	term.track("s", 10*time.Second)
	clock.advance(9 * time.Second)
	if !term.extend("s", 10*time.Second) {
		t.Fatal("extend before the deadline refused")
	}
	clock.advance(10 * time.Second) // exactly at the deadline: expiry may be in flight
	if term.extend("s", 10*time.Second) {
		t.Fatal("extend at the deadline accepted; the leader may already be expiring the session")
	}
}

func TestLeaderTerm_ExpiredAdoptsUnknownSessionsWithFullTTL(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, f := newTestTerm(clock)
	now := time.Unix(1000, 0)
	res := f.ApplyCommand(1, fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: "a", TTL: 5 * time.Second})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := term.expired(); len(got) != 0 {
		t.Fatalf("a session the table did not know expired at once: %v", got)
	}
	clock.advance(4 * time.Second)
	if got := term.expired(); len(got) != 0 {
		t.Fatalf("expired before its TTL: %v", got)
	}
	clock.advance(time.Second)
	if got := term.expired(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("expired() = %v, want [a] at the TTL", got)
	}
	// Sessions gone from the state leave the table.
	f.ApplyCommand(2, fsm.Command{Op: fsm.OpDestroySession, Now: now, Session: "a"})
	term.expired()
	if tracks(term, "a") {
		t.Fatal("destroyed session still has a deadline")
	}
}

// tracks reports whether the term's deadline table holds session id.
func tracks(term *leaderTerm, id string) bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.deadlines.has(id)
}

func TestLeaderTerm_LeaseRunsToTheEndARoundGave(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, _ := newTestTerm(clock)
	term.ready = true
	until := clock.Now().Add(400 * time.Millisecond)
	term.finishRound(until, nil, nil)
	clock.advance(399 * time.Millisecond)
	if !term.leaseValid() {
		t.Fatal("lease invalid before its end")
	}
	// A round that gives an earlier end (a smaller promise) does not
	// shorten a lease already held: that one is still backed.
	term.finishRound(clock.Now().Add(-time.Second), nil, nil)
	if !term.leaseValid() {
		t.Fatal("a later round with an earlier end shortened the lease")
	}
	clock.advance(time.Millisecond)
	if term.leaseValid() {
		t.Fatal("lease still valid at its end")
	}
	// A failed round tells its waiters and renews nothing.
	ch := make(chan error, 1)
	term.finishRound(clock.Now().Add(time.Second), raft.ErrNotLeader, []chan error{ch})
	if err := <-ch; api.CodeOf(err) != api.CodeNoLeader || term.leaseValid() {
		t.Fatalf("failed round: err %v, lease valid %v", err, term.leaseValid())
	}
	term.finishRound(clock.Now().Add(time.Second), nil, []chan error{ch})
	if err := <-ch; err != nil || !term.leaseValid() {
		t.Fatalf("good round: err %v, lease valid %v", err, term.leaseValid())
	}
	// Given up for a transfer: invalid at once, and no renewal.
	term.giveUpLease()
	if term.leaseValid() {
		t.Fatal("lease valid after it was given up")
	}
	term.finishRound(clock.Now().Add(time.Second), nil, []chan error{ch})
	if err := <-ch; api.CodeOf(err) != api.CodeNoLeader || term.leaseValid() {
		t.Fatalf("round after giving up: err %v, lease valid %v", err, term.leaseValid())
	}
}

func TestErrors_Translation(t *testing.T) {
	n := &Node{cfg: validConfig(), clock: SystemClock{}}
	until := time.Now().Add(3 * time.Second)
	tests := []struct {
		err  error
		code string
	}{
		{fsm.ErrSessionNotFound, api.CodeSessionExpired},
		{fsm.ErrLockHeld, api.CodeLockHeld},
		{fsm.ErrModeConflict, api.CodeLockHeld},
		{fsm.ErrStillQueued, api.CodeLockHeld},
		{fsm.ErrQueuedInOtherMode, api.CodeLockHeld},
		{fsm.ErrNotHolder, api.CodeNotHolder},
		{&fsm.DelayError{Until: until}, api.CodeLockDelay},
		{errors.Join(fsm.ErrBadCommand, errors.New("x")), api.CodeBadRequest},
		{&fsm.QuotaError{Owner: "t", Limit: "keys", Max: 1, Used: 1, Would: 2}, api.CodeQuotaExceeded},
		{fmt.Errorf("%w: %q", fsm.ErrOwnerNotFound, "t"), api.CodeUnauthorized},
	}
	for _, tt := range tests {
		if got := api.CodeOf(n.apiErr(tt.err, "s", "lock")); got != tt.code {
			t.Errorf("apiErr(%v) code = %q, want %q", tt.err, got, tt.code)
		}
	}
	// A queued session is told it is queued, not that it holds the lock
	// or that another session does and nothing more.
	for err, want := range map[error]string{
		fsm.ErrStillQueued:       `lock is held by another session; session "s" stays queued for it`,
		fsm.ErrQueuedInOtherMode: `session "s" is already queued for lock in the other mode`,
		fsm.ErrModeConflict:      `lock is already held by session "s" in the other mode`,
		fsm.ErrLockHeld:          `lock is held by another session`,
	} {
		if got := n.apiErr(fmt.Errorf("%w: x", err), "s", "lock").Error(); !strings.HasPrefix(got, want) {
			t.Errorf("apiErr(%v) = %q, want it to start %q", err, got, want)
		}
	}
	var e *api.Error
	if !errors.As(n.apiErr(&fsm.DelayError{Until: until}, "s", "lock"), &e) || e.RetryAfter <= 0 {
		t.Fatalf("lock_delay without Retry-After: %+v", e)
	}
}
