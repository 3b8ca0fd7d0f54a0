package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
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

// cycle takes name for session under number seq and lets go of it under
// seq+1.
func (h *harness) cycle(session, name string, seq uint64) {
	h.t.Helper()
	h.mustApply(seqd(acquire(session, name, "", 0), seq))
	h.mustApply(seqd(release(session, name), seq+1))
}

func createW(id string, window int) Command {
	c := create(id, 0)
	c.SeqWindow = window
	return c
}

// seqTableOf returns a copy of the session's request numbers and floor.
func seqTableOf(f *FSM, session string) (map[string]uint64, uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.st.seqs.get(session)
	if !ok {
		return nil, 0
	}
	return maps.Clone(t.last), t.floor
}

// A bounded session keeps the numbers of what it holds and queues for,
// and of as many objects it let go of as its window; an unbounded one (as
// older builds' entries create) keeps every number.
func TestSeq_BoundedTableKeepsWhatTheSessionHoldsAndQueuesFor(t *testing.T) {
	h := newHarness(t)
	h.mustApply(createW("a", 4))
	h.mustApply(create("old", 0))
	h.mustApply(create("other", 0))
	h.mustApply(acquire("other", "q", "", 0))
	seq := uint64(0)
	next := func() uint64 { seq++; return seq }
	for _, name := range []string{"h1", "h2", "h3"} {
		h.mustApply(seqd(acquire("a", name, "", 0), next()))
	}
	h.mustApply(seqd(acquire("a", "q", "", time.Hour), next()))
	h.mustApply(seqd(campaign("a", "e", "v", 0), next()))
	for i := range 100 {
		for _, s := range []string{"a", "old"} {
			h.cycle(s, fmt.Sprintf("n%03d", i), next())
			next()
		}
	}
	last, floor := seqTableOf(h.f, "a")
	kept := slices.Sorted(maps.Keys(last))
	want := []string{"e/e", "l/h1", "l/h2", "l/h3", "l/n096", "l/n097", "l/n098", "l/n099", "l/q"}
	if !slices.Equal(kept, want) || floor == 0 {
		t.Fatalf("bounded session keeps %v (floor %d), want %v and a floor", kept, floor, want)
	}
	if last, floor := seqTableOf(h.f, "old"); len(last) != 100 || floor != 0 {
		t.Fatalf("unbounded session keeps %d numbers (floor %d), want all 100", len(last), floor)
	}
	checkInvariants(t, h.f)
	// Letting go of what it holds (or leaving a queue) moves those numbers
	// to the window too, where the highest four stay.
	h.mustApply(seqd(release("a", "h1"), next()))
	h.mustApply(seqd(release("a", "q"), next()))
	last, _ = seqTableOf(h.f, "a")
	want = []string{"e/e", "l/h1", "l/h2", "l/h3", "l/n098", "l/n099", "l/q"}
	if kept := slices.Sorted(maps.Keys(last)); !slices.Equal(kept, want) {
		t.Fatalf("after letting go of h1 and q: %v, want %v", kept, want)
	}
}

// The guarantee of request numbers holds for numbers a bounded session no
// longer keeps: a retry of an acquire, release, campaign, proclaim or
// resign that was applied is not applied again.
func TestSeq_DroppedNumberStillRefusesItsRetry(t *testing.T) {
	h := newHarness(t)
	h.mustApply(createW("a", 2))
	h.mustApply(create("b", 0))
	acq := seqd(acquire("a", "x", "", 0), 1)
	first := h.mustApply(acq)
	rel := seqd(release("a", "x"), 2)
	h.mustApply(rel)
	camp := seqd(campaign("a", "e", "v1", 0), 3)
	h.mustApply(camp)
	res := seqd(resign("a", "e"), 4)
	h.mustApply(res)
	seq := uint64(10)
	for i := range 5 { // five other locks let go of: x's and e's numbers go
		h.cycle("a", fmt.Sprint("y", i), seq+1)
		seq += 2
	}
	if last, floor := seqTableOf(h.f, "a"); last["l/x"] != 0 || last["e/e"] != 0 || floor < 4 {
		t.Fatalf("numbers of x and e still kept: %v (floor %d)", last, floor)
	}
	before := mustStateJSON(t, h.f)
	if r := h.apply(acq); !errors.Is(r.Err, ErrRepeated) || r.Granted {
		t.Fatalf("retry of the acquire after its number was dropped = %+v, want a repeat", r)
	}
	if r := h.apply(camp); !errors.Is(r.Err, ErrRepeated) || r.Granted {
		t.Fatalf("retry of the campaign after its number was dropped = %+v, want a repeat", r)
	}
	if after := mustStateJSON(t, h.f); !bytes.Equal(before, after) {
		t.Fatal("a retry of an applied request changed the state")
	}
	// x and e taken again under new numbers; the old release and resign,
	// arriving late, leave the new holdings alone.
	seq++
	again := h.mustApply(seqd(acquire("a", "x", "", 0), seq))
	seq++
	h.mustApply(seqd(campaign("a", "e", "v2", 0), seq))
	if r := h.apply(rel); !errors.Is(r.Err, ErrNotHolder) {
		t.Fatalf("late release = %+v", r)
	}
	if r := h.apply(res); !errors.Is(r.Err, ErrNotHolder) {
		t.Fatalf("late resign = %+v", r)
	}
	if r := h.apply(seqd(proclaim("a", "e", "v9"), 3)); !errors.Is(r.Err, ErrNotHolder) {
		t.Fatalf("proclaim under a dropped number = %+v", r)
	}
	if x, e := h.f.Lock("x"), h.f.Election("e"); !slices.Equal(holders(x), []string{"a:" + fmt.Sprint(again.Token)}) || e.Value != "v2" {
		t.Fatalf("after the late copies: x %+v, e %+v (first grant %d)", x, e, first.Token)
	}
}

// For a client whose numbers grow in the order its requests are applied
// (one request at a time, retries included), a bounded session answers
// every request, new or repeated, exactly as an unbounded one does.
func TestSeq_BoundedAnswersAsUnboundedForOrderedRequests(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		bounded, unbounded := newHarness(t), newHarness(t)
		bounded.mustApply(createW("a", 1+rng.IntN(3)))
		unbounded.mustApply(create("a", 0))
		for _, h := range []*harness{bounded, unbounded} {
			h.mustApply(create("b", 0))
			h.mustApply(acquire("b", "busy", "", 0))
		}
		var sent []Command
		seq := uint64(0)
		for i := range 400 {
			var c Command
			if len(sent) > 0 && rng.IntN(3) == 0 {
				c = sent[rng.IntN(len(sent))] // a retry, or a late copy
			} else {
				seq++
				name := fmt.Sprint("n", rng.IntN(12))
				switch rng.IntN(6) {
				case 0, 1:
					c = acquire("a", name, "", 0)
				case 2:
					c = acquire("a", pick(rng, "busy", name), "", time.Minute)
				case 3:
					c = release("a", name)
				case 4:
					c = campaign("a", name, fmt.Sprint("v", i), 0)
				default:
					c = resign("a", name)
				}
				c = seqd(c, seq)
				sent = append(sent, c)
			}
			rb, ru := bounded.apply(c), unbounded.apply(c)
			if describe(rb) != describe(ru) {
				t.Fatalf("seed %d step %d %+v: bounded %s, unbounded %s", seed, i, c, describe(rb), describe(ru))
			}
		}
		if !reflect.DeepEqual(bounded.f.Locks(), unbounded.f.Locks()) || !reflect.DeepEqual(bounded.f.Elections(), unbounded.f.Elections()) {
			t.Fatalf("seed %d: the states differ", seed)
		}
		checkInvariants(t, bounded.f)
	}
}

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.IntN(len(xs))] }

// The price of a bounded table: a request applied for the first time
// after its session let go of more objects than its window under higher
// numbers (it ran beside them, and arrived late) is taken for a repeat.
func TestSeq_LateFirstRequestUnderTheFloorIsTakenForARepeat(t *testing.T) {
	h := newHarness(t)
	h.mustApply(createW("a", 1))
	h.cycle("a", "p", 2) // numbers 2 to 5, while number 1 is on its way
	h.cycle("a", "q", 4)
	if r := h.apply(seqd(acquire("a", "x", "", 0), 1)); !errors.Is(r.Err, ErrRepeated) {
		t.Fatalf("late first acquire under the floor = %+v, want it taken for a repeat", r)
	}
	if r := h.mustApply(seqd(acquire("a", "x", "", 0), 6)); !r.Granted {
		t.Fatalf("the same acquire under a new number = %+v", r)
	}
}

// A bounded table, its floor included, survives a snapshot: the restored
// replica refuses the same retries and encodes to the same bytes.
func TestSeq_BoundedTableSurvivesSnapshot(t *testing.T) {
	h := newHarness(t)
	h.mustApply(createW("a", 1))
	h.cycle("a", "x", 1)
	h.cycle("a", "y", 3)
	h.mustApply(seqd(acquire("a", "z", "", 0), 5)) // held: x's number is in the floor
	snap := mustSnapshot(t, h.f)
	g := mustRestore(t, snap)
	checkInvariants(t, g)
	if again := mustSnapshot(t, g); !bytes.Equal(again, snap) {
		t.Fatalf("restored bounded table encodes as\n%s\nwant\n%s", again, snap)
	}
	b, _ := Encode(seqd(acquire("a", "x", "", 0), 1))
	if r := g.Apply(h.idx+1, b); !errors.Is(r.Err, ErrRepeated) {
		t.Fatalf("retry on the restored replica = %+v, want a repeat", r)
	}
}
