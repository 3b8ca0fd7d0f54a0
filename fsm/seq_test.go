package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func seqd(c Command, seq uint64) Command { c.Seq = seq; return c }

func TestSeq_LateAcquireAfterReleaseDoesNotRegrant(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	got := h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 1))
	h.mustApply(seqd(release("a", "x"), 2))
	before := mustStateJSON(t, h.f)
	// The abandoned first attempt of acquire #1 arrives now.
	res := h.apply(seqd(acquire("a", "x", Exclusive, 0), 1))
	if !errors.Is(res.Err, ErrRepeated) || res.Granted {
		t.Fatalf("late acquire = %+v, want a refusal saying it repeats one applied (the lock is free)", res)
	}
	if after := mustStateJSON(t, h.f); !bytes.Equal(before, after) {
		t.Fatal("late acquire changed the state")
	}
	// A new acquire (a higher number) is served as usual.
	if res := h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 3)); !res.Granted || res.Token <= got.Token {
		t.Fatalf("new acquire = %+v", res)
	}
}

func TestSeq_LateReleaseDoesNotDropANewHolding(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 1))
	h.mustApply(seqd(release("a", "x"), 2))
	second := h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 3))
	res := h.apply(seqd(release("a", "x"), 2)) // the first release's lost twin
	if !errors.Is(res.Err, ErrNotHolder) {
		t.Fatalf("late release = %+v, want ErrNotHolder", res)
	}
	if l := h.f.Lock("x"); len(l.Holders) != 1 || l.Holders[0].Token != second.Token {
		t.Fatalf("holding after late release: %+v", l.Holders)
	}
}

func TestSeq_RetriesAnswerFromCurrentState(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	first := h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 5))
	if res := h.mustApply(seqd(acquire("a", "x", Exclusive, 0), 5)); !res.Granted || res.Token != first.Token {
		t.Fatalf("retried granted acquire = %+v, want token %d", res, first.Token)
	}
	// A queued waiter that retries keeps its place.
	h.mustApply(create("c", 0))
	h.mustApply(seqd(acquire("b", "x", Exclusive, 60e9), 1))
	h.mustApply(seqd(acquire("c", "x", Exclusive, 60e9), 1))
	if res := h.apply(seqd(acquire("b", "x", Exclusive, 60e9), 1)); res.Err != nil || res.Granted {
		t.Fatalf("retried queued acquire = %+v", res)
	}
	if w := h.f.Lock("x").Waiters; len(w) != 2 || w[0].Session != "b" {
		t.Fatalf("queue after retry: %+v", w)
	}
	// Numbers are per object: a lower number on another lock is new there.
	if res := h.mustApply(seqd(acquire("a", "y", Exclusive, 0), 1)); !res.Granted {
		t.Fatalf("acquire of another lock with a lower number = %+v", res)
	}
	// Commands without a number are never repeats.
	if res := h.mustApply(acquire("a", "x", Exclusive, 0)); !res.Granted {
		t.Fatalf("unnumbered retry = %+v", res)
	}
}

func TestSeq_ElectionsAndSnapshotsAndSessionEnd(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(seqd(campaign("a", "e", "v1", 0), 1))
	h.mustApply(seqd(resign("a", "e"), 2))
	if res := h.apply(seqd(proclaim("a", "e", "v2"), 1)); !errors.Is(res.Err, ErrNotHolder) {
		t.Fatalf("late proclaim = %+v", res)
	}
	// The numbers survive a snapshot: a restored replica refuses the same.
	r := mustRestore(t, mustSnapshot(t, h.f))
	b, _ := Encode(seqd(campaign("a", "e", "v1", 0), 1))
	if res := r.Apply(h.idx+1, b); !errors.Is(res.Err, ErrRepeated) {
		t.Fatalf("late campaign on a restored replica = %+v", res)
	}
	h.mustApply(destroy("a"))
	if n := h.f.st.seqs.len(); n != 0 {
		t.Fatalf("request numbers kept after the session ended: %d sessions", n)
	}
}

// TestSeq_RepeatOfARefusalTellsTheCurrentState checks that an acquire
// refused once (here by a lock-delay) and then repeated with the same
// number is refused as the lock's current state says: by the lock-delay
// while it lasts, as held while another session holds it, and as a repeat
// once the lock is free; never as held by another session when nobody
// holds it.
func TestSeq_RepeatOfARefusalTellsTheCurrentState(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", time.Second))
	h.mustApply(create("b", 0))
	h.mustApply(create("c", 0))
	h.mustApply(acquire("a", "x", Exclusive, 0))
	h.mustApply(expire("a")) // x is free, in a's lock-delay
	try := seqd(acquire("b", "x", Exclusive, 0), 1)
	if res := h.apply(try); !errors.Is(res.Err, ErrLockDelay) {
		t.Fatalf("first try = %+v, want the lock-delay", res)
	}
	if res := h.apply(try); !errors.Is(res.Err, ErrLockDelay) {
		t.Fatalf("repeat inside the lock-delay = %+v, want the lock-delay", res)
	}
	var fired []TimerRef // the lock-delay's timer fires
	for _, tm := range h.f.Timers() {
		fired = append(fired, tm.TimerRef)
	}
	h.mustApply(due(fired...))
	h.mustApply(acquire("c", "x", Exclusive, 0))
	if res := h.apply(try); !errors.Is(res.Err, ErrLockHeld) {
		t.Fatalf("repeat while c holds x = %+v, want held", res)
	}
	h.mustApply(release("c", "x"))
	if res := h.apply(try); !errors.Is(res.Err, ErrRepeated) || res.Granted {
		t.Fatalf("repeat with x free = %+v, want a refusal saying it repeats one applied", res)
	}
}
