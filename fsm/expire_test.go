package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func expireAll(ids ...string) Command { return Command{Op: OpExpireSessions, Sessions: ids} }

// expiryState builds, on a new harness, sessions a..d that hold, share,
// queue for and lead locks and an election, so that expiring them
// releases, hands over and starts lock-delays. It is deterministic: two
// calls build the same state at the same indexes.
func expiryState(t *testing.T) *harness {
	h := newHarness(t)
	h.mustApply(create("a", 0)) // what a held is granted again at once
	for _, id := range []string{"b", "c", "d"} {
		h.mustApply(create(id, 10*time.Second))
	}
	h.mustApply(acquire("a", "x", Exclusive, 0))         // a holds x
	h.mustApply(acquire("c", "x", Exclusive, time.Hour)) // c queues for x
	h.mustApply(acquire("a", "y", Shared, 0))            // a and b share y
	h.mustApply(acquire("b", "y", Shared, 0))
	h.mustApply(acquire("b", "z", Exclusive, 0))         // b holds z alone
	h.mustApply(acquire("d", "w", Exclusive, 0))         // d holds w ...
	h.mustApply(acquire("a", "w", Exclusive, time.Hour)) // ... and a queues for it
	h.mustApply(campaign("a", "e", "va", 0))             // a leads e
	h.mustApply(campaign("d", "e", "vd", time.Hour))     // d queues for e
	return h
}

// One expire-sessions entry leaves the state exactly as expiring each
// session in turn at that index would: the same releases, hand-overs,
// lock-delays and queues.
func TestExpireSessions_SameAsOneExpiryEach(t *testing.T) {
	for _, ids := range [][]string{{"a"}, {"a", "b"}, {"b", "a"}, {"a", "b", "c", "d"}, {"d", "c"}} {
		t.Run(fmt.Sprint(ids), func(t *testing.T) {
			h := expiryState(t)
			res := h.mustApply(expireAll(ids...))

			ref := expiryState(t)
			o := op{index: ref.idx + 1, now: ref.now}
			var want []Expiry
			ref.f.mu.Lock()
			for _, id := range ids {
				r := ref.f.st.endSession(o, id, true)
				want = append(want, Expiry{Session: id, Released: r.Released, Resigned: r.Resigned})
			}
			ref.f.st.applied = o.index
			ref.f.mu.Unlock()

			checkInvariants(t, h.f)
			if got, wantState := mustStateJSON(t, h.f), mustStateJSON(t, ref.f); !bytes.Equal(got, wantState) {
				t.Fatalf("state after one entry:\n%s\nafter one expiry each:\n%s", got, wantState)
			}
			if fmt.Sprint(res.Expired) != fmt.Sprint(want) {
				t.Fatalf("Expired = %+v, want %+v", res.Expired, want)
			}
		})
	}
}

func TestExpireSessions_Behaviour(t *testing.T) {
	tests := []struct {
		name    string
		c       Command
		err     error
		expired []string // the sessions Result.Expired names, in order
	}{
		{"one", expireAll("b"), nil, []string{"b"}},
		{"gone ids are skipped", expireAll("nobody", "b", "gone"), nil, []string{"b"}},
		{"a repeat is skipped", expireAll("b", "a", "b"), nil, []string{"b", "a"}},
		{"only gone ids", expireAll("nobody"), nil, nil},
		{"empty list", expireAll(), ErrBadCommand, nil},
		{"empty id", expireAll("a", ""), ErrBadCommand, nil},
		{"too many", expireAll(slices.Repeat([]string{"a"}, MaxSessionsPerEntry+1)...), ErrBadCommand, nil},
		{"as many as allowed", expireAll(slices.Repeat([]string{"a"}, MaxSessionsPerEntry)...), nil, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := expiryState(t)
			before := mustStateJSON(t, h.f)
			res := h.apply(tt.c)
			if !errors.Is(res.Err, tt.err) {
				t.Fatalf("err %v, want %v", res.Err, tt.err)
			}
			if tt.err != nil && !bytes.Equal(before, mustStateJSON(t, h.f)) {
				t.Fatal("a refusal changed the state")
			}
			var got []string
			for _, e := range res.Expired {
				got = append(got, e.Session)
			}
			if !slices.Equal(got, tt.expired) {
				t.Fatalf("expired %v, want %v", got, tt.expired)
			}
			for _, id := range tt.expired {
				if _, ok := h.f.Session(id); ok {
					t.Fatalf("session %s still exists", id)
				}
			}
			checkInvariants(t, h.f)
		})
	}
}

// What an expire-sessions entry reports for each session it ended.
func TestExpireSessions_ReportsWhatEachReleased(t *testing.T) {
	h := expiryState(t)
	res := h.mustApply(expireAll("a", "b"))
	want := []Expiry{
		{Session: "a", Released: []string{"x", "y"}, Resigned: []string{"e"}},
		{Session: "b", Released: []string{"y", "z"}},
	}
	if fmt.Sprint(res.Expired) != fmt.Sprint(want) {
		t.Fatalf("Expired = %+v, want %+v", res.Expired, want)
	}
	// a had no lock-delay: the queue moved up in the same entry, c holds x
	// and d leads e, both with the entry's index as token; y and z, last
	// held by b, are in its lock-delay.
	if got := holders(h.f.Lock("x")); !slices.Equal(got, []string{fmt.Sprintf("c:%d", h.idx)}) {
		t.Fatalf("x holders %v", got)
	}
	if got := holders(h.f.Election("e")); !slices.Equal(got, []string{fmt.Sprintf("d:%d", h.idx)}) {
		t.Fatalf("e holders %v", got)
	}
	for _, name := range []string{"y", "z"} {
		if l := h.f.Lock(name); l.Holders != nil || l.DelayIndex != h.idx {
			t.Fatalf("%s after expiry: %+v", name, l)
		}
	}
}

func TestOp_String(t *testing.T) {
	for op := OpCreateSession; op <= OpTxn; op++ {
		if s := op.String(); s == fmt.Sprintf("op(%d)", uint8(op)) {
			t.Errorf("op %d has no name", uint8(op))
		}
	}
	if got := OpExpireSessions.String(); got != "expire-sessions" {
		t.Errorf("OpExpireSessions.String() = %q", got)
	}
	if got := (OpTxn + 1).String(); got != "op(21)" {
		t.Errorf("unknown op String() = %q", got)
	}
}
