//go:build lockd_unsafe

package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUnsafeGrantHeld_BreaksExclusionOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafeGrantHeld(on)
		h.mustApply(create("a", 0))
		h.mustApply(create("b", 0))
		h.mustApply(acquire("a", "x", Exclusive, 0))
		res := h.apply(acquire("b", "x", Exclusive, 0))
		switch {
		case !on && !errors.Is(res.Err, ErrLockHeld):
			t.Fatalf("switch off: second acquire = %+v, want ErrLockHeld", res)
		case on && (!res.Granted || len(h.f.Lock("x").Holders) != 2):
			t.Fatalf("switch on: second acquire = %+v, holders %v; want a second exclusive holder", res, holders(h.f.Lock("x")))
		}
	}
}

// Under the grant-held switch Refusal does not refuse an acquire of a held
// lock: Apply would grant it.
func TestUnsafeGrantHeld_RefusalLetsTheAcquireThrough(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	h.mustApply(acquire("a", "x", "", 0))
	c := acquire("b", "x", "", 0)
	c.Now = h.now
	if err := h.f.Refusal(c); !errors.Is(err, ErrLockHeld) {
		t.Fatalf("Refusal with the switch off = %v, want lock held", err)
	}
	h.f.SetUnsafeGrantHeld(true)
	if err := h.f.Refusal(c); err != nil {
		t.Fatalf("Refusal under grant-held = %v, want nil", err)
	}
}

func TestUnsafeLowerToken_LowersEveryFourthGrantOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{LowerToken: on})
		h.mustApply(create("a", 0))                           // 1
		h.mustApply(create("b", 0))                           // 2
		first := h.mustApply(acquire("a", "x", Exclusive, 0)) // 3
		res := h.mustApply(acquire("b", "y", Exclusive, 0))   // 4: a multiple of four
		switch {
		case first.Token != 3:
			t.Fatalf("on=%v: first grant token %d, want 3", on, first.Token)
		case !on && res.Token != 4:
			t.Fatalf("switch off: grant at entry 4 has token %d, want 4", res.Token)
		case on && res.Token != 2:
			t.Fatalf("switch on: grant at entry 4 has token %d, want 2 (half its index, below the last grant's 3)", res.Token)
		}
		if got := h.f.Lock("y").Holders[0].Token; got != res.Token {
			t.Fatalf("on=%v: holder token %d, answer %d", on, got, res.Token)
		}
	}
}

func TestUnsafeEarlyLockDelay_ShortensOnlyLockDelayTimersWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{EarlyLockDelay: on})
		h.mustApply(create("a", time.Second))
		h.mustApply(create("b", 0))
		h.mustApply(acquire("a", "x", Exclusive, 0))
		h.mustApply(acquire("b", "x", Exclusive, 3*time.Second)) // queued: a wait timer
		h.mustApply(expire("a"))
		var delay, wait time.Duration
		for _, tm := range h.f.Timers() {
			if tm.Session == "" {
				delay = tm.Length
			} else {
				wait = tm.Length
			}
		}
		if wait != 3*time.Second {
			t.Fatalf("on=%v: wait timer %v, want 3s (the switch touches lock-delays only)", on, wait)
		}
		if want := map[bool]time.Duration{false: time.Second, true: 100 * time.Millisecond}[on]; delay != want {
			t.Fatalf("on=%v: lock-delay timer %v, want %v", on, delay, want)
		}
	}
}

func TestUnsafeBreakFIFO_HandsOffToTheLastWaiterOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{BreakFIFO: on})
		for _, s := range []string{"a", "b", "c"} {
			h.mustApply(create(s, 0))
		}
		h.mustApply(acquire("a", "x", Exclusive, 0))
		h.mustApply(acquire("b", "x", Exclusive, time.Minute))
		h.mustApply(acquire("c", "x", Exclusive, time.Minute))
		h.mustApply(release("a", "x"))
		want := map[bool]string{false: "b", true: "c"}[on]
		if got := holders(h.f.Lock("x")); len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Fatalf("on=%v: holders after the release %v, want %s", on, got, want)
		}
	}
}

func TestUnsafeForgetSeq_LateRepeatGrantsAnewOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{ForgetSeq: on})
		h.mustApply(create("a", 0))
		first := acquire("a", "x", Exclusive, 0)
		first.Seq = 1
		granted := h.mustApply(first)
		if again := h.mustApply(first); !again.Granted || again.Token != granted.Token {
			t.Fatalf("on=%v: repeat while holding = %+v, want token %d", on, again, granted.Token)
		}
		rel := release("a", "x")
		rel.Seq = 2
		h.mustApply(rel)
		late := h.apply(first)
		switch {
		case !on && (late.Granted || !errors.Is(late.Err, ErrRepeated) || len(h.f.Lock("x").Holders) != 0):
			t.Fatalf("switch off: late repeat = %+v, holders %v; want a refusal and a free lock", late, holders(h.f.Lock("x")))
		case on && !late.Granted:
			t.Fatalf("switch on: late repeat = %+v, want a new grant", late)
		}
	}
}

func TestUnsafeSkipWaiter_DropsTheHeadOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{SkipWaiter: on})
		for _, s := range []string{"a", "b", "c", "d", "e"} {
			h.mustApply(create(s, 0))
		}
		h.mustApply(acquire("a", "x", Exclusive, 0))
		h.mustApply(acquire("b", "x", Exclusive, time.Minute))
		h.mustApply(acquire("c", "x", Exclusive, time.Minute))
		h.mustApply(release("a", "x")) // index 9: a multiple of skipWaiterEvery
		want := map[bool]string{false: "b", true: "c"}[on]
		if got := holders(h.f.Lock("x")); len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Fatalf("on=%v: holders after the release %v, want %s", on, got, want)
		}
		if w := h.f.Lock("x").Waiters; on && len(w) != 0 || !on && (len(w) != 1 || w[0].Session != "c") {
			t.Fatalf("on=%v: waiters after the release %+v", on, w)
		}
	}
}

func TestUnsafeRefuseRepeat_RefusesTheHoldersRepeatOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{RefuseRepeat: on})
		h.mustApply(create("a", 0))
		first := acquire("a", "x", Exclusive, 0)
		first.Seq = 1
		granted := h.mustApply(first)
		again := h.apply(first)
		switch {
		case !on && (!again.Granted || again.Token != granted.Token):
			t.Fatalf("switch off: repeat while holding = %+v, want token %d", again, granted.Token)
		case on && (again.Granted || !errors.Is(again.Err, ErrLockHeld)):
			t.Fatalf("switch on: repeat while holding = %+v, want lock_held", again)
		}
		if got := holders(h.f.Lock("x")); len(got) != 1 {
			t.Fatalf("on=%v: the repeat changed the holders: %v", on, got)
		}
	}
}

// A put repeated with its request number is refused as a repeat, and
// changes nothing; under KVForgetSeq it is applied again, over a later
// write.
func TestUnsafeKVForgetSeq_RepeatedPutAppliedAgainOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{KVForgetSeq: on})
		h.mustApply(create("a", 0))
		first := puts("k", "v1")
		first.Session, first.Seq = "a", 1
		h.mustApply(first)
		second := puts("k", "v2")
		second.Session, second.Seq = "a", 2
		h.mustApply(second)
		again := h.apply(first)
		kv, _ := h.f.Get([]byte("k"))
		switch {
		case !on && (!errors.Is(again.Err, ErrRepeated) || string(kv.Value) != "v2"):
			t.Fatalf("switch off: repeat = %+v, value %q; want a refusal as repeated and v2", again, kv.Value)
		case on && (again.Err != nil || string(kv.Value) != "v1"):
			t.Fatalf("switch on: repeat = %+v, value %q; want v1 written again", again, kv.Value)
		}
	}
}

// A write guarded by a token that is not the holder's is refused; under
// StaleGuard it is applied, also once the lock is free.
func TestUnsafeStaleGuard_OldTokenAcceptedOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{StaleGuard: on})
		h.mustApply(create("a", 0))
		h.mustApply(create("b", 0))
		old := h.mustApply(acquire("a", "x", Exclusive, 0)).Token
		h.mustApply(release("a", "x"))
		w := puts("k", "late")
		w.Txn.Guard = &Guard{Lock: "x", Token: old}
		free := h.apply(w)
		h.mustApply(acquire("b", "x", Exclusive, 0))
		stale := h.apply(w)
		switch {
		case !on && (!errors.Is(free.Err, ErrNotHolder) || !errors.Is(stale.Err, ErrStaleToken)):
			t.Fatalf("switch off: guarded writes = %v, %v; want not holder, then stale token", free.Err, stale.Err)
		case on && (free.Err != nil || stale.Err != nil):
			t.Fatalf("switch on: guarded writes = %v, %v; want both applied", free.Err, stale.Err)
		}
		if _, ok := h.f.Get([]byte("k")); ok != on {
			t.Fatalf("on=%v: key written = %v", on, ok)
		}
	}
}

// The end of a session deletes its ephemeral keys; under KeepEphemeral
// the ones with an even create index stay, as keys of no session.
func TestUnsafeKeepEphemeral_KeysOutliveTheirSessionOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := newHarness(t)
		h.f.SetUnsafe(Unsafe{KeepEphemeral: on})
		h.mustApply(create("a", 0))            // 1
		h.mustApply(ephemeral("a", "k2", "v")) // 2: an even create index
		h.mustApply(ephemeral("a", "k3", "v")) // 3
		h.mustApply(destroy("a"))
		kept, ok := h.f.Get([]byte("k2"))
		_, other := h.f.Get([]byte("k3"))
		switch {
		case other:
			t.Fatalf("on=%v: the key created at an odd index outlived its session", on)
		case ok != on:
			t.Fatalf("on=%v: the key created at index 2 kept = %v", on, ok)
		case ok && kept.Session != "":
			t.Fatalf("a kept key still names its ended session %q", kept.Session)
		}
		if n := len(h.f.KeysOf("a")); n != 0 {
			t.Fatalf("on=%v: the ended session still owns %d keys", on, n)
		}
	}
}
