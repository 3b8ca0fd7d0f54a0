package fsm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// Whenever Refusal names a refusal, applying the command answers exactly
// that refusal and changes nothing but the applied index: on random logs
// whose lock and election commands carry request numbers, new and
// repeated, and with commands naming sessions that do not exist. A
// transaction applied leaves its owner with what the check of its
// limits foresaw.
func TestRefusal_IsWhatApplyAnswersAndChangesNothing(t *testing.T) {
	counts := map[string]int{}
	seeds := uint64(30)
	if raceDetector {
		seeds = 8
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		log := randomLog(t, seed, 1200)
		rng := rand.New(rand.NewPCG(seed, 7))
		f := New()
		// A short history, compacted often, keeps the state's encoding,
		// compared below around every refusal, small.
		if err := f.SetHistoryLimits(HistoryLimits{MinEvents: 20, MaxEvents: 100}); err != nil {
			t.Fatal(err)
		}
		for i, b := range log {
			c, err := Decode(b)
			if err != nil || c.legacy {
				f.Apply(uint64(i+1), b)
				continue
			}
			if rng.IntN(2) == 0 {
				c.Seq = uint64(rng.IntN(6))
			}
			refusal := f.Refusal(c)
			if refusal == nil {
				counts["applied"]++
				// What a transaction's owner would own after it, as the
				// check of its limits foresees it.
				var want KeyUsage
				if c.Op == OpTxn && c.Owner != "" {
					p, _ := f.st.planTxn(op{unsafe: f.unsafe}, c)
					u, d := f.st.kv.usage[c.Owner], f.st.kv.delta(c.Owner, p.ops)
					want = KeyUsage{Keys: u.Keys + d.Keys, Bytes: u.Bytes + d.Bytes}
				}
				// A transaction's refusals are all told in advance.
				res := f.ApplyCommand(uint64(i+1), c)
				if c.Op == OpTxn && res.Err != nil {
					t.Fatalf("seed %d entry %d: Refusal said nothing, Apply refused the transaction: %v", seed, i+1, res.Err)
				}
				if got := f.KeyUsage(c.Owner); c.Op == OpTxn && c.Owner != "" && got != want {
					t.Fatalf("seed %d entry %d: %s owns %+v after the transaction, foreseen %+v", seed, i+1, c.Owner, got, want)
				}
				continue
			}
			before := mustStateJSON(t, f)
			res := f.ApplyCommand(uint64(i+1), c)
			counts[refusalKind(refusal)]++
			if res.Err == nil || res.Err.Error() != refusal.Error() || res.Granted {
				t.Fatalf("seed %d entry %d %v: Refusal said %v, apply answered %+v", seed, i+1, c.Op, refusal, res)
			}
			if after := mustStateJSON(t, f); !bytes.Equal(before, after) {
				t.Fatalf("seed %d entry %d %v: refused as %v, yet the state changed", seed, i+1, c.Op, refusal)
			}
		}
	}
	t.Logf("%v", counts)
	for _, k := range []string{"held", "delay", "repeated", "session", "applied", "stale token", "not holder", "limit", "quota", "owner"} {
		if counts[k] == 0 {
			t.Errorf("no %s refusal told in advance: %v", k, counts)
		}
	}
}

func refusalKind(err error) string {
	var de *DelayError
	switch {
	case errors.As(err, &de) && de.Ref.Slot:
		return "slot delay"
	case errors.As(err, &de):
		return "delay"
	case errors.Is(err, ErrLimitConflict):
		return "limit"
	case errors.Is(err, ErrQuotaExceeded):
		return "quota"
	case errors.Is(err, ErrOwnerNotFound):
		return "owner"
	case errors.Is(err, ErrLockHeld):
		return "held"
	case errors.Is(err, ErrRepeated):
		return "repeated"
	case errors.Is(err, ErrSessionNotFound):
		return "session"
	case errors.Is(err, ErrStaleToken):
		return "stale token"
	case errors.Is(err, ErrNotHolder):
		return "not holder"
	}
	return "other"
}

// The refusals Refusal does not tell in advance: an acquire with a request
// number not seen before records it (a late copy of that request must not
// be applied later), and anything that would grant or queue.
func TestRefusal_NewRequestNumberMustBeApplied(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	h.mustApply(acquire("a", "x", "", 0))
	try := seqd(acquire("b", "x", "", 0), 1)
	try.Now = h.now
	if err := h.f.Refusal(try); err != nil {
		t.Fatalf("Refusal of a try with a new number = %v, want nil (it records the number)", err)
	}
	if res := h.apply(try); !errors.Is(res.Err, ErrLockHeld) {
		t.Fatalf("try = %+v", res)
	}
	// Now the number is known: its repeat is a pure refusal.
	if err := h.f.Refusal(try); !errors.Is(err, ErrLockHeld) {
		t.Fatalf("Refusal of the repeat = %v, want lock held", err)
	}
	h.mustApply(release("a", "x"))
	// The repeat of the refused try, once x is free: not applied again.
	if err := h.f.Refusal(try); !errors.Is(err, ErrRepeated) {
		t.Fatalf("Refusal of the repeat with x free = %v, want a repeat", err)
	}
	for _, c := range []Command{acquire("b", "x", "", 0), acquire("b", "y", "", time.Minute), seqd(acquire("b", "x", "", time.Minute), 2)} {
		c.Now = h.now
		if err := h.f.Refusal(c); err != nil {
			t.Fatalf("Refusal of %+v = %v, want nil (it would grant or queue)", c, err)
		}
	}
}
