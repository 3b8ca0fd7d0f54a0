package fsm

import (
	"slices"
	"testing"
	"time"
)

// An entry's Activity tells its grants at once and by hand-off, the locks
// a waiter got because their holder expired (at once or at the end of the
// lock-delay), and how long each ended holding lasted by the stamped wall
// times; Counts follows the holders and waiters, and a restored state
// counts the same.
func TestActivityAndCounts(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0))
	}
	h.mustApply(create("d", 5*time.Second))
	wantCounts := func(want Counts) {
		t.Helper()
		if got := h.f.Counts(); got != want {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
		if got := mustRestore(t, mustSnapshot(t, h.f)).Counts(); got != want {
			t.Fatalf("restored counts %+v, want %+v", got, want)
		}
	}
	wantAct := func(res Result, grants, handoffs int, after []string, holds ...time.Duration) {
		t.Helper()
		a := res.Activity
		if a.Grants != grants || a.Handoffs != handoffs || !slices.Equal(a.AfterExpiry, after) || !slices.Equal(a.Holds, holds) {
			t.Fatalf("entry %d: activity %+v, want %d grants, %d hand-offs, after expiry %v, holds %v", h.idx, a, grants, handoffs, after, holds)
		}
	}
	wantAct(h.mustApply(acquire("a", "x", Exclusive, 0)), 1, 0, nil)
	wantAct(h.mustApply(acquire("b", "x", Exclusive, time.Minute)), 0, 0, nil)
	wantAct(h.mustApply(acquire("c", "x", Exclusive, time.Minute)), 0, 0, nil)
	wantAct(h.mustApply(acquire("a", "s", Shared, 0)), 1, 0, nil)
	wantAct(h.mustApply(acquire("b", "s", Shared, 0)), 1, 0, nil)
	wantAct(h.mustApply(campaign("c", "e", "v", 0)), 0, 0, nil) // elections are not counted
	wantCounts(Counts{Sessions: 4, LockHolders: 3, LocksHeld: 2, LockWaiters: 2, ElectionsLed: 1})

	h.advance(3 * time.Second)
	wantAct(h.mustApply(release("a", "x")), 0, 1, nil, 3*time.Second)        // destroyed or released: not an expiry
	wantAct(h.mustApply(expire("b")), 0, 1, []string{"x"}, 3*time.Second, 0) // b held s (3s) and x; c gets x at once (no lock-delay)
	wantCounts(Counts{Sessions: 3, LockHolders: 2, LocksHeld: 2, ElectionsLed: 1})

	// d holds y with a lock-delay: its expiry hands y over only when the
	// delay ends.
	h.mustApply(acquire("d", "y", Exclusive, 0))
	h.mustApply(acquire("a", "y", Exclusive, time.Minute))
	h.advance(time.Second)
	wantAct(h.mustApply(expire("d")), 0, 0, nil, time.Second)
	armed := h.f.Lock("y").DelayIndex
	wantCounts(Counts{Sessions: 2, LockHolders: 2, LocksHeld: 2, LockWaiters: 1, ElectionsLed: 1})
	wantAct(h.mustApply(due(TimerRef{Name: "y", Armed: armed})), 0, 1, []string{"y"})
	wantCounts(Counts{Sessions: 2, LockHolders: 3, LocksHeld: 3, ElectionsLed: 1})
	// The end of a waiter's wait hands over too: a, holding z shared, is
	// joined by the shared waiter behind c's exclusive one when c's wait
	// runs out.
	h.mustApply(acquire("a", "z", Shared, 0))
	h.mustApply(acquire("c", "z", Exclusive, time.Minute))
	h.mustApply(create("e", 0))
	h.mustApply(acquire("e", "z", Shared, time.Minute))
	since := h.f.Lock("z").Waiters[0].Since
	wantAct(h.mustApply(due(TimerRef{Name: "z", Session: "c", Armed: since})), 0, 1, nil)
	h.mustApply(destroy("e"))
	h.mustApply(release("a", "z"))
	wantAct(h.mustApply(destroy("a")), 0, 0, nil, 4*time.Second, 0)
	wantCounts(Counts{Sessions: 1, LockHolders: 1, LocksHeld: 1, ElectionsLed: 1})
	checkInvariants(t, h.f)
}
