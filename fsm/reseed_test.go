package fsm

import (
	"reflect"
	"testing"
	"time"
)

func TestReseed_ForgetsMembersAndRestampsTimersOnly(t *testing.T) {
	h := refusalState(t)
	h.mustApply(acquire("c", "q", "", 0))
	h.mustApply(acquire("a", "q", "", 2*time.Minute))
	h.mustApply(acquire("b", "q", "", time.Minute))
	before := mustRestore(t, mustSnapshot(t, h.f))
	g := mustRestore(t, mustSnapshot(t, h.f))
	later := t0.Add(90 * 24 * time.Hour)
	g.Reseed(later, 0)
	checkInvariants(t, g)

	if m := g.Members(); len(m) != 0 {
		t.Fatalf("members after reseed: %v", m)
	}
	if g.AppliedIndex() != before.AppliedIndex() || !reflect.DeepEqual(g.Sessions(), before.Sessions()) ||
		!reflect.DeepEqual(g.Timers(), before.Timers()) || !reflect.DeepEqual(g.Tokens(), before.Tokens()) {
		t.Fatal("reseed changed the applied index, the sessions, the timers or the ACL tokens")
	}
	if d := g.Lock("dl"); !d.DelayUntil.Equal(later.Add(30 * time.Second)) {
		t.Fatalf("lock-delay shown to end %v, want 30s after %v", d.DelayUntil, later)
	}
	wantWait := map[string]time.Duration{"x/b": time.Minute, "q/a": 2 * time.Minute, "q/b": time.Minute, "e/b": time.Minute}
	objs := map[string]Lock{"x": g.Lock("x"), "q": g.Lock("q"), "e": g.Election("e")}
	olds := map[string]Lock{"x": before.Lock("x"), "q": before.Lock("q"), "e": before.Election("e")}
	for name, l := range objs {
		old := olds[name]
		if !reflect.DeepEqual(holders(l), holders(old)) || !reflect.DeepEqual(waiters(l), waiters(old)) || l.Value != old.Value || l.ModifyIndex != old.ModifyIndex {
			t.Fatalf("%s: holders %v waiters %v value %q; before %v %v %q", name, holders(l), waiters(l), l.Value, holders(old), waiters(old), old.Value)
		}
		for _, w := range l.Waiters {
			if want := later.Add(wantWait[name+"/"+w.Session]); !w.Deadline.Equal(want) {
				t.Fatalf("%s: waiter %s shown to end %v, want %v", name, w.Session, w.Deadline, want)
			}
		}
	}
	// A floor above the applied index moves it there, and a lower one
	// leaves it.
	g.Reseed(later, 2)
	if g.AppliedIndex() != before.AppliedIndex() {
		t.Fatalf("a floor below the applied index moved it to %d", g.AppliedIndex())
	}
	g.Reseed(later, 5000)
	if g.AppliedIndex() != 5000 {
		t.Fatalf("applied index %d after a floor of 5000", g.AppliedIndex())
	}
	if r := g.ApplyCommand(5001, acquire("c", "new", "", 0)); r.Err != nil || r.Token != 5001 {
		t.Fatalf("first entry after the floor: %+v", r)
	}
	// What it leaves is a state a snapshot carries whole.
	again := mustRestore(t, mustSnapshot(t, g))
	if !reflect.DeepEqual(readsOf(again, []string{"x", "q", "dl", "e"}), readsOf(g, []string{"x", "q", "dl", "e"})) {
		t.Fatal("the reseeded state does not survive a snapshot")
	}
}
