package fsm

import (
	"errors"
	"testing"
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
