package fsm

import (
	"errors"
	"testing"
)

// A client that lost the answer to a proclaim retries it with the same
// request number. While its session still leads with that value, the retry
// gets the success the first one got; the Go client would otherwise report
// that it no longer leads.
func TestSeq_RetriedProclaimSucceedsWhileStillLeadingWithItsValue(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	h.mustApply(seqd(campaign("a", "e", "first", 0), 1))
	h.mustApply(seqd(proclaim("a", "e", "second"), 2))
	before := h.f.Election("e").ModifyIndex
	if res := h.apply(seqd(proclaim("a", "e", "second"), 2)); res.Err != nil {
		t.Fatalf("retried proclaim refused while the session leads with its value: %v", res.Err)
	}
	if e := h.f.Election("e"); e.ModifyIndex != before || e.Value != "second" {
		t.Fatalf("the retry changed the election: %+v", e)
	}
	// A late copy of an older proclaim is no retry of the last one: the
	// value it set is gone, so it is refused and changes nothing.
	h.mustApply(seqd(proclaim("a", "e", "third"), 3))
	if res := h.apply(seqd(proclaim("a", "e", "second"), 2)); !errors.Is(res.Err, ErrNotHolder) {
		t.Fatalf("late older proclaim = %v, want not_holder", res.Err)
	}
	if v := h.f.Election("e").Value; v != "third" {
		t.Fatalf("late older proclaim set the value to %q", v)
	}
	// After the session resigned, a retry of its proclaim is refused: it
	// leads no more.
	h.mustApply(seqd(resign("a", "e"), 4))
	h.mustApply(seqd(campaign("b", "e", "third", 0), 1))
	if res := h.apply(seqd(proclaim("a", "e", "third"), 3)); !errors.Is(res.Err, ErrNotHolder) {
		t.Fatalf("retry after resigning = %v, want not_holder", res.Err)
	}
}
