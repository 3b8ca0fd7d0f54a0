package fsm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestFirstAfter_Pages(t *testing.T) {
	m := newCowMap(func(v int) int { return v })
	for _, k := range []string{"d", "a", "f", "b", "e", "c"} {
		m.set(k, 0)
	}
	tests := []struct {
		after string
		limit int
		want  []string
		more  bool
	}{
		{"", 2, []string{"a", "b"}, true},
		{"b", 2, []string{"c", "d"}, true},
		{"d", 2, []string{"e", "f"}, false},
		{"", 6, []string{"a", "b", "c", "d", "e", "f"}, false},
		{"", 100, []string{"a", "b", "c", "d", "e", "f"}, false},
		{"", 5, []string{"a", "b", "c", "d", "e"}, true},
		{"bb", 1, []string{"c"}, true}, // a cursor need not name a key
		{"f", 3, []string{}, false},
		{"z", 3, []string{}, false},
		{"", 0, []string{"a"}, true}, // a limit below 1 is 1
	}
	for _, tt := range tests {
		got, more := firstAfter(m, tt.after, tt.limit)
		if !slices.Equal(got, tt.want) || more != tt.more {
			t.Errorf("firstAfter(%q, %d) = %v %v, want %v %v", tt.after, tt.limit, got, more, tt.want, tt.more)
		}
	}
}

// Following the cursor page by page lists every session once, in the order
// of Sessions, whatever the page size.
func TestSessionsAfter_FollowingTheCursorListsEverySession(t *testing.T) {
	h := newHarness(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		h.mustApply(Command{Op: OpCreateSession, Session: fmt.Sprintf("%08x", rng.Uint32()), TTL: time.Second})
	}
	all := h.f.Sessions()
	for _, limit := range []int{1, 7, 100, 299, 300, 1000} {
		var got []Session
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatalf("limit %d: more pages than sessions", limit)
			}
			page, more := h.f.SessionsAfter(after, limit)
			if len(page) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page))
			}
			got = append(got, page...)
			if !more {
				break
			}
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, all) {
			t.Fatalf("limit %d: pages give %d sessions, Sessions %d (or another order)", limit, len(got), len(all))
		}
	}
}

func TestLocksAfter_Pages(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	for _, name := range []string{"q", "p/1", "p/2", "r"} {
		h.mustApply(acquire("a", name, Shared, 0))
		h.mustApply(campaign("a", "e/"+name, "v", 0))
	}
	page, more := h.f.LocksAfter("", 3)
	if names := lockNames(page); !slices.Equal(names, []string{"p/1", "p/2", "q"}) || !more {
		t.Fatalf("first page %v more %v", names, more)
	}
	if page[0].Holders[0].Session != "a" {
		t.Fatalf("page holds %+v", page[0])
	}
	page, more = h.f.LocksAfter("q", 3)
	if names := lockNames(page); !slices.Equal(names, []string{"r"}) || more {
		t.Fatalf("second page %v more %v", names, more)
	}
	page, more = h.f.ElectionsAfter("e/p/2", 10)
	if names := lockNames(page); !slices.Equal(names, []string{"e/q", "e/r"}) || more {
		t.Fatalf("elections page %v more %v", names, more)
	}
	// A page is a copy: changing it changes nothing in the state.
	page[0].Holders = nil
	if h.f.Election("e/q").Holders == nil {
		t.Fatal("a page shares its holders with the state")
	}
}

func lockNames(ls []Lock) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}
