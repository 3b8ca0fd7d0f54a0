package fsm

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// watchSet watches several topics at once and tells which an entry closed.
type watchSet struct {
	f    *FSM
	chs  map[string]<-chan struct{}
	tops map[string]Topic
}

func watchAll(f *FSM, topics map[string]Topic) *watchSet {
	w := &watchSet{f: f, chs: map[string]<-chan struct{}{}, tops: topics}
	for k, t := range topics {
		w.chs[k], _ = f.Watch(t)
	}
	return w
}

// fired returns which topics' channels are closed, and watches those again.
func (w *watchSet) fired() map[string]bool {
	out := map[string]bool{}
	for k, ch := range w.chs {
		if closed(ch) {
			out[k] = true
			w.chs[k], _ = w.f.Watch(w.tops[k])
		}
	}
	return out
}

func sameSet(got map[string]bool, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, k := range want {
		if !got[k] {
			return false
		}
	}
	return true
}

// An entry wakes the watchers of what it changed and no others: the lock
// it changed, the locks' list, the standing of the sessions whose holding
// or place changed, and AppliedTopic; never a watcher of another lock, of
// the elections, or of a waiter whose place did not change.
func TestWatch_AnEntryWakesOnlyTheTopicsItChanged(t *testing.T) {
	h := newHarness(t)
	for _, s := range []string{"a", "b", "c", "d"} {
		h.mustApply(create(s, 0))
	}
	h.mustApply(acquire("a", "x", "", 0))
	h.mustApply(acquire("b", "x", "", time.Minute))
	h.mustApply(acquire("c", "x", "", time.Minute))
	w := watchAll(h.f, map[string]Topic{
		"x": ObjectTopic(false, "x"), "y": ObjectTopic(false, "y"), "ex": ObjectTopic(true, "x"),
		"locks": SpaceTopic(false), "elections": SpaceTopic(true), "applied": AppliedTopic(),
		"a@x": StandingTopic(false, "x", "a"), "b@x": StandingTopic(false, "x", "b"),
		"c@x": StandingTopic(false, "x", "c"), "d@x": StandingTopic(false, "x", "d"),
		"b@ex": StandingTopic(true, "x", "b"),
	})
	steps := []struct {
		c    Command
		want []string
	}{
		// Another waiter joins: the waiters already queued sleep on.
		{acquire("d", "x", "", time.Minute), []string{"x", "locks", "applied", "d@x"}},
		// The holder lets go: the head is granted; c and d sleep on.
		{release("a", "x"), []string{"x", "locks", "applied", "a@x", "b@x"}},
		// A lock nobody watches.
		{acquire("a", "y", "", 0), []string{"y", "locks", "applied"}},
		// An election of the same name as the lock.
		{campaign("b", "x", "v", 0), []string{"ex", "elections", "applied", "b@ex"}},
		// A refusal changes nothing but the applied index.
		{acquire("a", "x", "", 0), []string{"applied"}},
		// A waiter in the middle leaves.
		{cancelWait("c", "x"), []string{"x", "locks", "applied", "c@x"}},
	}
	for i, s := range steps {
		h.apply(s.c)
		if got := w.fired(); !sameSet(got, s.want...) {
			t.Fatalf("step %d (%v): woke %v, want %v", i, s.c.Op, got, s.want)
		}
	}
	// Ending a session wakes its standing on everything it held, and the
	// standing of the waiter its lock passes to.
	h.mustApply(expire("b"))
	if got := w.fired(); !sameSet(got, "x", "ex", "locks", "elections", "applied", "b@x", "b@ex", "d@x") {
		t.Fatalf("expiry woke %v", got)
	}
}

// A watcher that gives its channel up leaves nothing behind, and a
// restore wakes every watcher.
func TestWatch_GivingUpForgetsAndRestoreWakesAll(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	var stops []func()
	for i := range 100 {
		_, stop := h.f.Watch(ObjectTopic(false, fmt.Sprintf("n%d", i)))
		stops = append(stops, stop)
		_, stop = h.f.Watch(ObjectTopic(false, fmt.Sprintf("n%d", i))) // twice: both must give up
		stops = append(stops, stop)
	}
	for _, stop := range stops {
		stop()
	}
	if n := len(h.f.watch.m); n != 0 {
		t.Fatalf("%d topics still watched after every watcher gave up", n)
	}
	ch, stop := h.f.Watch(ObjectTopic(true, "nothing"))
	defer stop()
	if err := h.f.Restore(bytes.NewReader(mustSnapshot(t, New()))); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("restore did not wake a watcher")
	}
	stop() // after the close: a no-op
	if n := len(h.f.watch.m); n != 0 {
		t.Fatalf("%d topics watched after restore", n)
	}
}

// Standing agrees with the lock's own holders and queue through a
// hand-off, a shared grant, a cancel and a session's end.
func TestStanding_FollowsTheLock(t *testing.T) {
	h := newHarness(t)
	for _, s := range []string{"a", "b", "c", "d"} {
		h.mustApply(create(s, 0))
	}
	cmds := []Command{
		acquire("a", "x", "", 0), acquire("b", "x", Shared, time.Minute), acquire("c", "x", Shared, time.Minute),
		acquire("d", "x", "", time.Minute), release("a", "x"), cancelWait("d", "x"), expire("b"),
		campaign("a", "x", "v", 0), campaign("d", "x", "w", time.Minute),
	}
	for _, c := range cmds {
		h.mustApply(c)
		for _, election := range []bool{false, true} {
			l := h.f.Lock("x")
			if election {
				l = h.f.Election("x")
			}
			for _, s := range []string{"a", "b", "c", "d"} {
				tok, held, queued := h.f.Standing(election, "x", s)
				i, j := l.holder(s), l.waiter(s)
				if held != (i >= 0) || queued != (j >= 0) || (held && tok != l.Holders[i].Token) {
					t.Fatalf("after %v: Standing(%v, x, %s) = %d %v %v; lock %+v", c.Op, election, s, tok, held, queued, l)
				}
			}
		}
	}
}
