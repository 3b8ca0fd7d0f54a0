package lease

import (
	"context"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// Each limit refuses the request one past it with too_many_requests and
// no log entry, and never refuses a repeat of what a session already
// holds or waits for.
func TestLimits_RefuseWithoutEntry(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.n.cfg.MaxSessionsPerToken, tn.n.cfg.MaxObjectsPerSession, tn.n.cfg.MaxWaitersPerObject = 2, 2, 1
	tn.startTerm()
	ctx := context.Background()
	create := func(owner string) func() error {
		return func() error {
			_, err := tn.n.CreateSession(ctx, api.CreateSessionRequest{TTL: api.Duration(time.Hour), Owner: owner})
			return err
		}
	}
	tn.expectCode("first session of token t", 1, "", create("t"))
	tn.expectCode("second session of token t", 1, "", create("t"))
	tn.expectCode("third session of token t", 0, api.CodeTooMany, create("t"))
	tn.expectCode("a session of another token", 1, "", create("u"))
	tn.expectCode("a session without owner (ACLs off)", 1, "", create(""))

	a, b, c := tn.session(0, time.Hour), tn.session(0, time.Hour), tn.session(0, time.Hour)
	acq := func(s, name string, wait time.Duration) func() error {
		return func() error {
			_, err := tn.n.Acquire(ctx, name, api.AcquireRequest{Session: s, Wait: api.Duration(wait)})
			return err
		}
	}
	tn.expectCode("a takes x", 1, "", acq(a, "x", 0))
	if _, err := tn.n.Campaign(ctx, "e", api.CampaignRequest{Session: a, Value: "v"}); err != nil {
		t.Fatal(err)
	}
	tn.expectCode("a's third object", 0, api.CodeTooMany, acq(a, "y", 0))
	tn.expectCode("a repeats x", 1, "", acq(a, "x", 0))
	// b queues on x; c may not: x has as many waiters as allowed.
	go func() { _ = acq(b, "x", time.Hour)() }() // b waits until the test ends; what it gets is not checked
	waitUntil(t, func() bool { _, _, queued := tn.n.fsm.Standing(false, "x", b); return queued })
	tn.expectCode("c queues on a full queue", 0, api.CodeTooMany, acq(c, "x", 50*time.Millisecond))
	tn.expectCode("c tries x without waiting", 0, api.CodeLockHeld, acq(c, "x", 0))
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
	}
}
