package lease

import (
	"context"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// entries returns how many entries the node's one-node log has committed.
func (tn *timedNode) entries() uint64 {
	e := tn.n.eng.(*applyEngine)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.index
}

// expectCode runs call and checks its error's code and how many log
// entries it cost.
func (tn *timedNode) expectCode(what string, entries uint64, code string, call func() error) {
	tn.t.Helper()
	before := tn.entries()
	err := call()
	if got := api.CodeOf(err); got != code || (code == "" && err != nil) {
		tn.t.Fatalf("%s = %v (code %q), want code %q", what, err, got, code)
	}
	if got := tn.entries() - before; got != entries {
		tn.t.Fatalf("%s cost %d log entries, want %d", what, got, entries)
	}
}

// Refusals the leader can tell from its own state are answered without a
// log entry: anything naming a session that does not exist, and a
// try-acquire or try-campaign of an object held by another session, or in
// a lock-delay, without a request number or with one already applied. A
// refused try with a number not seen before still costs its entry, which
// records the number.
func TestRefusals_WithoutLogEntry(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.startTerm()
	ctx := context.Background()
	a, b := tn.session(time.Hour, time.Hour), tn.session(0, time.Hour)
	for _, name := range []string{"x", "d"} {
		if err := tn.tryAcquire(a, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tn.n.Campaign(ctx, "e", api.CampaignRequest{Session: a, Value: "v"}); err != nil {
		t.Fatal(err)
	}
	acq := func(s, name string, seq uint64) func() error {
		return func() error {
			_, err := tn.n.Acquire(ctx, name, api.AcquireRequest{Session: s, Seq: seq})
			return err
		}
	}
	const gone = "0123456789abcdef0123456789abcdef"
	for what, call := range map[string]func() error{
		"acquire": acq(gone, "x", 0),
		"blocking": func() error {
			_, err := tn.n.Acquire(ctx, "x", api.AcquireRequest{Session: gone, Wait: api.Duration(time.Minute)})
			return err
		},
		"release":   func() error { return tn.n.Release(ctx, "x", api.SessionRequest{Session: gone, Seq: 3}) },
		"campaign":  func() error { _, err := tn.n.Campaign(ctx, "e", api.CampaignRequest{Session: gone}); return err },
		"proclaim":  func() error { return tn.n.Proclaim(ctx, "e", api.ProclaimRequest{Session: gone, Value: "w"}) },
		"resign":    func() error { return tn.n.Resign(ctx, "e", api.SessionRequest{Session: gone}) },
		"destroy":   func() error { return tn.n.DestroySession(ctx, gone) },
		"keepalive": func() error { _, err := tn.n.KeepAlive(ctx, gone); return err },
	} {
		tn.expectCode(what+" by an unknown session", 0, api.CodeSessionExpired, call)
	}

	tn.expectCode("try of a held lock", 0, api.CodeLockHeld, acq(b, "x", 0))
	tn.expectCode("try-campaign of a led election", 0, api.CodeLockHeld, func() error {
		_, err := tn.n.Campaign(ctx, "e", api.CampaignRequest{Session: b, Value: "w"})
		return err
	})
	tn.expectCode("try with a new request number", 1, api.CodeLockHeld, acq(b, "x", 7))
	tn.expectCode("its repeat", 0, api.CodeLockHeld, acq(b, "x", 7))
	tn.expectCode("an older number", 0, api.CodeLockHeld, acq(b, "x", 6))

	if err := tn.n.Release(ctx, "x", api.SessionRequest{Session: a}); err != nil {
		t.Fatal(err)
	}
	tn.mustPropose(fsm.Command{Op: fsm.OpExpireSession, Session: a}) // d stays in a's lock-delay
	tn.expectCode("try inside a lock-delay", 0, api.CodeLockDelay, acq(b, "d", 0))
	// The refused try's number was recorded: its late copy is not applied
	// now that x is free, and says so, without an entry.
	tn.expectCode("late copy of the refused try", 0, api.CodeRepeated, acq(b, "x", 7))
	if l := tn.n.fsm.Lock("x"); len(l.Holders) != 0 {
		t.Fatalf("x after the late copy: %+v", l)
	}
	tn.expectCode("a new try of the free lock", 1, "", acq(b, "x", 8))
}
