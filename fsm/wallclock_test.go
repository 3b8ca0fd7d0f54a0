package fsm

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// outcome renders what an entry decided, leaving out the wall times it
// recorded for display.
func outcome(r Result) string {
	switch {
	case errors.Is(r.Err, ErrLockDelay):
		return "lock-delay"
	case r.Err != nil:
		return "refused: " + errors.Unwrap(r.Err).Error()
	case r.Granted:
		return fmt.Sprint("granted ", r.Token)
	}
	return "ok"
}

// No grant or refusal depends on the wall time a leader stamps into an
// entry: the same entries stamped by a leader whose clock is a day ahead or
// a day behind decide exactly what they decide with true clocks.
func TestStamps_DecideNoLockDelayOrWait(t *testing.T) {
	type entry struct {
		after time.Duration // on the true clock, before this entry
		c     Command
		odd   bool // stamped by the leader whose clock is off
	}
	scenarios := map[string][]entry{
		"lock-delay after expiry": {
			{c: create("a", 5*time.Second)},
			{c: create("b", 0)},
			{c: acquire("a", "x", "", 0)},
			{c: expire("a"), odd: true},
			{c: acquire("b", "x", "", 0)},
			{after: time.Second, c: acquire("b", "x", "", 0)},
			{after: time.Minute, c: acquire("b", "x", "", 0)},
			{after: 2 * time.Hour, c: acquire("b", "x", "", 0)},
		},
		"waiter's wait": {
			{c: create("a", 0)},
			{c: create("b", 0)},
			{c: acquire("a", "x", "", 0)},
			{c: acquire("b", "x", "", 5*time.Second), odd: true},
			{after: time.Second, c: release("a", "x")},
		},
		"election candidate's wait": {
			{c: create("a", 0)},
			{c: create("b", 0)},
			{c: campaign("a", "e", "va", 0)},
			{c: campaign("b", "e", "vb", 5*time.Second), odd: true},
			{after: time.Second, c: resign("a", "e")},
		},
	}
	for name, entries := range scenarios {
		run := func(off time.Duration) []string {
			h := newHarness(t)
			var out []string
			for _, e := range entries {
				h.advance(e.after)
				c := e.c
				c.Now = h.now
				if e.odd {
					c.Now = h.now.Add(off)
				}
				res := h.apply(c)
				// What the entry decided, and who holds what after it.
				out = append(out, fmt.Sprintf("%s, x held by %v, e led by %v", outcome(res), holders(h.f.Lock("x")), holders(h.f.Election("e"))))
			}
			return out
		}
		want := run(0)
		for _, off := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
			if got := run(off); !slices.Equal(got, want) {
				t.Errorf("%s: one entry stamped %v off changes the outcomes:\n got %q\nwant %q", name, off, got, want)
			}
		}
	}
}

// A lock-delay lasts until the timers-due entry that names it, whatever
// the wall times around it; a ref to an earlier delay of the same lock
// does not end a later one.
func TestLockDelay_EndsOnlyByItsTimer(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 5*time.Second)) // 1
	h.mustApply(create("b", 0))             // 2
	h.mustApply(create("c", 3*time.Second)) // 3
	h.mustApply(acquire("a", "x", Shared, 0))
	h.mustApply(acquire("c", "x", Shared, 0))
	h.mustApply(acquire("b", "x", "", time.Hour)) // 6: queued
	h.mustApply(expire("a"))                      // 7: delay of 5s from 7
	want := []Timer{
		{TimerRef{Name: "x", Armed: 7}, 5 * time.Second},
		{TimerRef{Name: "x", Session: "b", Armed: 6}, time.Hour},
	}
	if got := h.f.Timers(); !slices.Equal(got, want) {
		t.Fatalf("timers %v, want %v", got, want)
	}
	h.advance(48 * time.Hour) // no wall time ends it
	h.mustApply(expire("c"))  // 8: restarts it, at the longer length
	want[0] = Timer{TimerRef{Name: "x", Armed: 8}, 5 * time.Second}
	if got := h.f.Timers(); !slices.Equal(got, want) {
		t.Fatalf("timers after the second expiry %v, want %v", got, want)
	}
	res := h.apply(acquire("b", "x", "", 0))
	var de *DelayError
	if !errors.As(res.Err, &de) && !errors.Is(res.Err, ErrLockHeld) {
		t.Fatalf("acquire by the queued session: %v", res.Err)
	}
	h.mustApply(due(TimerRef{Name: "x", Armed: 7})) // the first delay's timer: stale
	if x := h.f.Lock("x"); x.DelayIndex != 8 || len(x.Holders) != 0 {
		t.Fatalf("a stale timer ended the delay: %+v", x)
	}
	h.mustApply(due(TimerRef{Name: "x", Armed: 8})) // 11: ends it; b is next
	x := h.f.Lock("x")
	if !slices.Equal(holders(x), []string{"b:11"}) || x.DelayIndex != 0 || !x.DelayUntil.IsZero() || x.ModifyIndex != 11 {
		t.Fatalf("after the delay's timer: %+v", x)
	}
	if got := h.f.Timers(); len(got) != 0 {
		t.Fatalf("timers left: %v", got)
	}
}

// A try-acquire inside a lock-delay learns which timer holds it up and for
// how long in full; the delay's shown end is display only.
func TestLockDelay_ErrorNamesTheTimer(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 10*time.Second))
	h.mustApply(create("b", 0))
	h.mustApply(campaign("a", "e", "v", 0))
	h.apply(Command{Op: OpExpireSession, Session: "a", Now: t0.Add(24 * time.Hour)}) // 4
	res := h.apply(campaign("b", "e", "w", 0))
	var de *DelayError
	if !errors.As(res.Err, &de) {
		t.Fatalf("campaign inside the delay: %v", res.Err)
	}
	want := DelayError{Ref: TimerRef{Election: true, Name: "e", Armed: 4}, Length: 10 * time.Second, Until: t0.Add(24*time.Hour + 10*time.Second)}
	if *de != want {
		t.Fatalf("delay error %+v, want %+v", *de, want)
	}
}

// A waiter leaves the queue when the timers-due entry names its wait, and
// a retry of its acquire restarts the wait: the old timer no longer drops
// it. Whoever is next then gets the lock in that same entry.
func TestWait_EndsOnlyByItsTimer(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0)) // 1..3
	}
	h.mustApply(acquire("a", "x", Shared, 0))         // 4
	h.mustApply(acquire("b", "x", "", time.Second))   // 5: exclusive, queued
	h.mustApply(acquire("c", "x", Shared, time.Hour)) // 6: queued behind b
	h.advance(24 * time.Hour)
	h.mustApply(acquire("b", "x", "", time.Second)) // 7: retry restarts b's wait
	h.mustApply(due(TimerRef{Name: "x", Session: "b", Armed: 5}))
	if w := waiters(h.f.Lock("x")); !slices.Equal(w, []string{"b", "c"}) {
		t.Fatalf("the restarted wait ended by its old timer: queue %v", w)
	}
	h.mustApply(due(TimerRef{Name: "x", Session: "b", Armed: 7})) // 9
	x := h.f.Lock("x")
	if !slices.Equal(holders(x), []string{"a:4", "c:9"}) || x.Waiters != nil || x.ModifyIndex != 9 {
		t.Fatalf("after b's wait ran out: %+v", x)
	}
}
