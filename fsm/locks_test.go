package fsm

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// refusalState builds a state with something of everything: held, shared,
// queued and delayed locks, an election with a queue, and a member.
func refusalState(t *testing.T) *harness {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0))
	}
	h.mustApply(create("d", 30*time.Second))
	h.mustApply(acquire("a", "x", "", 0))
	h.mustApply(acquire("b", "x", Exclusive, time.Minute))
	h.mustApply(acquire("a", "sh", Shared, 0))
	h.mustApply(acquire("d", "dl", Exclusive, 0))
	h.mustApply(expire("d"))
	h.mustApply(campaign("c", "e", "v1", 0))
	h.mustApply(campaign("b", "e", "v2", time.Minute))
	h.mustApply(Command{Op: OpSetMember, Member: &Member{ID: "n1"}})
	return h
}

func TestApplyCommand_RefusalLeavesStateUnchanged(t *testing.T) {
	h := refusalState(t)
	tests := []struct {
		name string
		c    Command
		err  error
	}{
		{"acquire by missing session", acquire("zz", "x", "", 0), ErrSessionNotFound},
		{"acquire without name", acquire("c", "", "", 0), ErrBadCommand},
		{"acquire in unknown mode", acquire("c", "x", "bogus", 0), ErrBadCommand},
		{"acquire with negative wait", acquire("c", "x", "", -time.Second), ErrBadCommand},
		{"try-acquire of a held lock", acquire("c", "x", "", 0), ErrLockHeld},
		{"holder asks for the other mode", acquire("a", "x", Shared, 0), ErrModeConflict},
		{"waiter retries without wait", acquire("b", "x", "", 0), ErrStillQueued},
		{"waiter retries in the other mode", acquire("b", "x", Shared, time.Minute), ErrQueuedInOtherMode},
		{"try-acquire inside lock-delay", acquire("c", "dl", "", 0), ErrLockDelay},
		{"now beyond range", Command{Op: OpAcquire, Session: "c", Name: "y", Now: maxNow}, ErrBadCommand},
		{"release by missing session", release("zz", "x"), ErrSessionNotFound},
		{"an older entry's release by a waiter", oldRelease("b", "x"), ErrNotHolder},
		{"let-go by a stranger", release("c", "x"), ErrNotHolder},
		{"release of a missing lock", release("a", "nope"), ErrNotHolder},
		{"release without name", release("a", ""), ErrBadCommand},
		{"cancel-wait by missing session", cancelWait("zz", "x"), ErrSessionNotFound},
		{"cancel-wait without name", cancelWait("a", ""), ErrBadCommand},
		{"cancel-wait by a stranger", cancelWait("c", "x"), nil},
		{"campaign by missing session", campaign("zz", "e", "v", 0), ErrSessionNotFound},
		{"campaign without wait on a led election", campaign("a", "e", "v", 0), ErrLockHeld},
		{"campaign in shared mode", Command{Op: OpCampaign, Session: "a", Name: "e", Mode: Shared}, ErrBadCommand},
		{"campaign with negative wait", campaign("a", "e", "v", -1), ErrBadCommand},
		{"proclaim by a candidate", proclaim("b", "e", "v"), ErrNotHolder},
		{"proclaim by missing session", proclaim("zz", "e", "v"), ErrSessionNotFound},
		{"proclaim on a missing election", proclaim("c", "nope", "v"), ErrNotHolder},
		{"resign by a stranger", resign("a", "e"), ErrNotHolder},
		{"resign without name", resign("c", ""), ErrBadCommand},
		{"cancel-campaign by missing session", cancelCampaign("zz", "e"), ErrSessionNotFound},
		{"destroy missing session", destroy("zz"), ErrSessionNotFound},
		{"expire missing session", expire("zz"), ErrSessionNotFound},
		{"expire twice", expire("d"), ErrSessionNotFound},
		{"create existing session", create("a", 0), ErrSessionExists},
		{"set member without id", Command{Op: OpSetMember, Member: &Member{}}, ErrBadCommand},
		{"remove member without member", Command{Op: OpRemoveMember}, ErrBadCommand},
		{"tick in a version-2 entry", tick(), ErrBadCommand},
		{"timers-due naming none", due(), ErrBadCommand},
		{"timers-due naming a timer without its entry", due(TimerRef{Name: "dl"}), ErrBadCommand},
		{"timers-due naming a timer without a name", due(TimerRef{Armed: 9}), ErrBadCommand},
		{"timers-due with one bad ref among good ones", due(TimerRef{Name: "dl", Armed: 9}, TimerRef{Armed: 9}), ErrBadCommand},
		{"timers-due for a restarted lock-delay", due(TimerRef{Name: "dl", Armed: 8}), nil},
		{"timers-due for a restarted wait", due(TimerRef{Name: "x", Session: "b", Armed: 5}), nil},
		{"timers-due for a lock-delay of an election", due(TimerRef{Election: true, Name: "dl", Armed: 9}), nil},
		{"timers-due for a missing object", due(TimerRef{Name: "nope", Armed: 9}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := mustStateJSON(t, h.f)
			res := h.apply(tt.c)
			if !errors.Is(res.Err, tt.err) {
				t.Fatalf("err %v, want %v", res.Err, tt.err)
			}
			if res.Granted || res.Token != 0 {
				t.Fatalf("granted %v token %d", res.Granted, res.Token)
			}
			if after := mustStateJSON(t, h.f); !bytes.Equal(before, after) {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
			if got := h.f.AppliedIndex(); got != h.idx {
				t.Fatalf("applied index %d, want %d", got, h.idx)
			}
		})
	}
}

func TestApplyCommand_UnusableEntries(t *testing.T) {
	h := refusalState(t)
	tests := []struct {
		name  string
		index uint64
		c     Command
	}{
		{"unknown op", h.idx + 1, Command{Op: 99, Now: t0}},
		{"op zero", h.idx + 2, Command{Op: 0, Now: t0}},
		{"invalid UTF-8", h.idx + 3, Command{Op: OpCreateSession, Session: "\xff", TTL: time.Second, Now: t0}},
		{"now before year 1", h.idx + 4, Command{Op: OpTick, Now: time.Time{}.Add(-time.Hour)}},
		{"stale index", h.idx, create("new", 0)},
		{"index zero", 0, create("new", 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := mustStateJSON(t, h.f)
			applied := h.f.AppliedIndex()
			res := h.f.ApplyCommand(tt.index, tt.c)
			if !errors.Is(res.Err, ErrBadCommand) || res.Index != tt.index {
				t.Fatalf("result %+v, want ErrBadCommand at %d", res, tt.index)
			}
			if !bytes.Equal(before, mustStateJSON(t, h.f)) {
				t.Fatal("state changed")
			}
			if want := max(applied, tt.index); h.f.AppliedIndex() != want {
				t.Fatalf("applied index %d, want %d", h.f.AppliedIndex(), want)
			}
		})
	}
}

func TestAcquire_Behaviour(t *testing.T) {
	tests := []struct {
		name  string
		steps []step // after sessions a (1), b (2), c (3)
		check func(t *testing.T, f *FSM)
	}{
		{
			name:  "free lock is granted with the entry's index",
			steps: []step{{c: acquire("a", "x", "", 0), granted: true, token: 4}},
			check: func(t *testing.T, f *FSM) {
				x := f.Lock("x")
				want := Lock{Name: "x", Mode: Exclusive, Holders: []Holder{{"a", 4, t0}}, ModifyIndex: 4}
				if !equalLock(x, want) || !f.Check("x", 4) {
					t.Fatalf("x = %+v, want %+v", x, want)
				}
			},
		},
		{
			name: "repeated acquire returns the same token and changes nothing",
			steps: []step{
				{c: acquire("a", "x", Exclusive, 0), granted: true, token: 4},
				{c: acquire("a", "x", "", time.Minute), granted: true, token: 4},
			},
			check: func(t *testing.T, f *FSM) {
				if x := f.Lock("x"); x.ModifyIndex != 4 || len(x.Holders) != 1 {
					t.Fatalf("x = %+v", x)
				}
			},
		},
		{
			name: "shared holders coexist",
			steps: []step{
				{c: acquire("a", "x", Shared, 0), granted: true, token: 4},
				{c: acquire("b", "x", Shared, 0), granted: true, token: 5},
				{c: acquire("c", "x", Exclusive, 0), err: ErrLockHeld},
			},
			check: func(t *testing.T, f *FSM) {
				if got := holders(f.Lock("x")); !slices.Equal(got, []string{"a:4", "b:5"}) {
					t.Fatalf("holders %v", got)
				}
			},
		},
		{
			name: "blocking acquire queues with a deadline",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: acquire("c", "x", Shared, 2*time.Minute)},
			},
			check: func(t *testing.T, f *FSM) {
				want := []Waiter{
					{Session: "b", Mode: Exclusive, Deadline: t0.Add(time.Minute), Wait: time.Minute, Since: 5},
					{Session: "c", Mode: Shared, Deadline: t0.Add(2 * time.Minute), Wait: 2 * time.Minute, Since: 6},
				}
				if x := f.Lock("x"); !slices.Equal(x.Waiters, want) || x.ModifyIndex != 6 {
					t.Fatalf("x = %+v", x)
				}
			},
		},
		{
			name: "retry while queued keeps the place and restarts the wait at the longest length",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: acquire("c", "x", "", time.Minute)},
				{advance: 30 * time.Second, c: acquire("b", "x", "", time.Minute)},
				{c: acquire("c", "x", "", time.Second)},
			},
			check: func(t *testing.T, f *FSM) {
				x := f.Lock("x")
				want := []Waiter{
					{Session: "b", Mode: Exclusive, Deadline: t0.Add(90 * time.Second), Wait: time.Minute, Since: 7},
					{Session: "c", Mode: Exclusive, Deadline: t0.Add(time.Minute), Wait: time.Minute, Since: 8},
				}
				if !slices.Equal(x.Waiters, want) || x.ModifyIndex != 8 {
					t.Fatalf("x = %+v, want waiters %+v at 8", x, want)
				}
			},
		},
		{
			name: "value is ignored on locks",
			steps: []step{
				{c: Command{Op: OpAcquire, Session: "a", Name: "x", Value: "v"}, granted: true, token: 4},
				{c: Command{Op: OpAcquire, Session: "b", Name: "x", Value: "v", Wait: time.Minute}},
			},
			check: func(t *testing.T, f *FSM) {
				if x := f.Lock("x"); x.Value != "" || x.Waiters[0].Value != "" {
					t.Fatalf("x = %+v", x)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, id := range []string{"a", "b", "c"} {
				h.mustApply(create(id, 0))
			}
			runSteps(t, h, tt.steps)
			tt.check(t, h.f)
		})
	}
}

func TestRelease_FIFOHandOffInReleaseEntry(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		h.mustApply(create(id, time.Minute)) // 1..4; destroy and release ignore lock-delay
	}
	runSteps(t, h, []step{
		{c: acquire("a", "x", "", 0), granted: true, token: 5},
		{c: acquire("b", "x", "", time.Hour)},
		{c: acquire("c", "x", "", time.Hour)},
		{c: acquire("d", "x", "", time.Hour)},
	})
	for _, tt := range []struct {
		holder string
		want   []string
	}{
		{"a", []string{"b:9"}},
		{"b", []string{"c:10"}},
		{"c", []string{"d:11"}},
		{"d", nil},
	} {
		h.mustApply(release(tt.holder, "x"))
		x := h.f.Lock("x")
		if got := holders(x); !slices.Equal(got, tt.want) || x.ModifyIndex != h.idx || h.f.LocksIndex() != h.idx {
			t.Fatalf("after %s released at %d: x = %+v, want holders %v", tt.holder, h.idx, x, tt.want)
		}
		checkInvariants(t, h.f)
	}
	if got := h.f.Locks(); len(got) != 0 {
		t.Fatalf("locks after last release: %+v", got)
	}
}

func TestShared_ExclusiveWaiterNotOvertaken(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		h.mustApply(create(id, 0)) // 1..5
	}
	runSteps(t, h, []step{
		{c: acquire("a", "x", Shared, 0), granted: true, token: 6},
		{c: acquire("b", "x", Shared, 0), granted: true, token: 7},
		{c: acquire("c", "x", Exclusive, time.Hour)},        // 8: queued behind readers
		{c: acquire("d", "x", Shared, 0), err: ErrLockHeld}, // 9: compatible, but c is first
		{c: acquire("d", "x", Shared, time.Hour)},           // 10
		{c: acquire("e", "x", Shared, time.Hour)},           // 11
		{c: release("a", "x")},                              // 12: b still reads
	})
	if x := h.f.Lock("x"); !slices.Equal(holders(x), []string{"b:7"}) || !slices.Equal(waiters(x), []string{"c", "d", "e"}) {
		t.Fatalf("after first release: %+v", x)
	}
	h.mustApply(release("b", "x")) // 13
	if x := h.f.Lock("x"); !slices.Equal(holders(x), []string{"c:13"}) || x.Mode != Exclusive {
		t.Fatalf("after readers left: %+v", x)
	}
	h.mustApply(release("c", "x")) // 14
	x := h.f.Lock("x")
	if !slices.Equal(holders(x), []string{"d:14", "e:14"}) || x.Mode != Shared || x.Waiters != nil {
		t.Fatalf("after writer left: %+v", x)
	}
}

// Version-1 entries (written by builds that decided lock-delays and waits
// by the leader's wall time) replay as they were decided.
func TestVersion1_LockDelayByWallTime(t *testing.T) {
	h := newHarness(t)
	h.v1 = true
	h.mustApply(create("a", 10*time.Second)) // 1
	h.mustApply(create("b", 0))              // 2
	h.mustApply(create("c", 0))              // 3
	runSteps(t, h, []step{
		{c: acquire("a", "x", "", 0), granted: true, token: 4},
		{c: acquire("a", "y", "", 0), granted: true, token: 5},
		{c: acquire("b", "x", "", time.Hour)},           // 6
		{c: expire("a")},                                // 7
		{c: acquire("b", "x", "", 0), err: ErrLockHeld}, // queued: stays queued
		{c: acquire("c", "x", "", 0), err: ErrLockDelay},
		{c: acquire("c", "y", "", 0), err: ErrLockDelay},
		{advance: 5 * time.Second, c: tick()},                                             // 11: still inside the delay
		{advance: 5 * time.Second, c: acquire("c", "y", "", 0), granted: true, token: 12}, // queue empty, delay over
	})
	if x := h.f.Lock("x"); x.Holders != nil || !slices.Equal(waiters(x), []string{"b"}) || x.ModifyIndex != 7 {
		t.Fatalf("waiter granted before the tick: %+v", x)
	}
	h.mustApply(tick()) // 13: hands x to b
	res := h.apply(acquire("c", "x", "", 0))
	if !errors.Is(res.Err, ErrLockHeld) {
		t.Fatalf("acquire after hand-off: %v", res.Err)
	}
	x := h.f.Lock("x")
	if !slices.Equal(holders(x), []string{"b:13"}) || !x.DelayUntil.IsZero() || x.ModifyIndex != 13 {
		t.Fatalf("x = %+v", x)
	}
	if y := h.f.Lock("y"); !y.DelayUntil.IsZero() {
		t.Fatalf("y keeps a stale delay: %+v", y)
	}
}

func TestVersion1_DelayErrorAndTickThatEndsIt(t *testing.T) {
	h := newHarness(t)
	h.v1 = true
	h.mustApply(create("a", 10*time.Second))
	h.mustApply(create("b", 0))
	h.mustApply(acquire("a", "x", "", 0))
	h.advance(time.Second)
	h.mustApply(expire("a"))
	h.advance(3 * time.Second)
	res := h.apply(acquire("b", "x", "", 0))
	var de *DelayError
	if !errors.As(res.Err, &de) || !de.Until.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("err %v, want DelayError until %v", res.Err, t0.Add(11*time.Second))
	}
	want := []Timer{{TimerRef{Name: "x", Armed: 4}, 10 * time.Second}}
	if got := h.f.Timers(); !slices.Equal(got, want) || de.Ref != want[0].TimerRef || de.Length != want[0].Length {
		t.Fatalf("Timers = %v, error %+v; want %v", got, de, want)
	}
	// With nobody waiting, the tick that ends the delay deletes the lock.
	h.now = de.Until
	h.mustApply(tick())
	if got := h.f.Lock("x"); got.ModifyIndex != h.idx || !got.DelayUntil.IsZero() || len(h.f.Locks()) != 0 {
		t.Fatalf("after delay: %+v, locks %v", got, h.f.Locks())
	}
	if got := h.f.Timers(); len(got) != 0 {
		t.Fatalf("timers still pending: %v", got)
	}
}

func TestVersion1_TickDropsWaitersByWallTime(t *testing.T) {
	h := newHarness(t)
	h.v1 = true
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0)) // 1..3
	}
	runSteps(t, h, []step{
		{c: acquire("a", "x", "", 0), granted: true, token: 4},
		{c: acquire("a", "y", "", 0), granted: true, token: 5},
		{c: acquire("b", "x", "", 5*time.Second)}, // 6
		{c: acquire("c", "x", "", time.Minute)},   // 7
		{c: acquire("b", "y", "", time.Minute)},   // 8
	})
	h.advance(5 * time.Second)
	h.mustApply(tick()) // 9
	checkInvariants(t, h.f)
	if x := h.f.Lock("x"); !slices.Equal(waiters(x), []string{"c"}) || x.ModifyIndex != 9 {
		t.Fatalf("x = %+v", x)
	}
	if y := h.f.Lock("y"); y.ModifyIndex != 8 {
		t.Fatalf("untouched y got modify index %d", y.ModifyIndex)
	}
	// A release after a waiter's deadline skips it even before any tick.
	h.advance(time.Minute)
	h.mustApply(oldRelease("a", "x")) // 10
	if x := h.f.Lock("x"); x.Holders != nil || x.Waiters != nil || x.ModifyIndex != 10 {
		t.Fatalf("expired waiter was granted: %+v", x)
	}
}

func TestCancelWait_Behaviour(t *testing.T) {
	tests := []struct {
		name  string
		steps []step // after sessions a (1), b (2), c (3)
		want  []string
		wait  []string
	}{
		{
			name: "granted waiter learns its token",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: release("a", "x")},
				{c: cancelWait("b", "x"), granted: true, token: 6},
			},
			want: []string{"b:6"},
		},
		{
			name: "queued waiter leaves",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: acquire("c", "x", "", time.Minute)},
				{c: cancelWait("b", "x")},
			},
			want: []string{"a:4"},
			wait: []string{"c"},
		},
		{
			name: "leaving head unblocks shared waiters behind it",
			steps: []step{
				{c: acquire("a", "x", Shared, 0), granted: true, token: 4},
				{c: acquire("b", "x", Exclusive, time.Minute)},
				{c: acquire("c", "x", Shared, time.Minute)},
				{c: cancelWait("b", "x")},
			},
			want: []string{"a:4", "c:7"},
		},
		{
			name:  "stranger changes nothing",
			steps: []step{{c: cancelWait("a", "x")}},
		},
		{
			name: "letting go takes a queued session out of the queue",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: acquire("c", "x", "", time.Minute)},
				{c: release("b", "x")},
				{c: release("a", "x")},
			},
			want: []string{"c:8"},
		},
		{
			name: "an older entry's release leaves a queued session queued",
			steps: []step{
				{c: acquire("a", "x", "", 0), granted: true, token: 4},
				{c: acquire("b", "x", "", time.Minute)},
				{c: oldRelease("b", "x"), err: ErrNotHolder},
			},
			want: []string{"a:4"},
			wait: []string{"b"},
		},
		{
			name:  "letting go of what it neither holds nor waits for is refused",
			steps: []step{{c: release("a", "x"), err: ErrNotHolder}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, id := range []string{"a", "b", "c"} {
				h.mustApply(create(id, 0))
			}
			runSteps(t, h, tt.steps)
			x := h.f.Lock("x")
			if !slices.Equal(holders(x), tt.want) || !slices.Equal(waiters(x), tt.wait) {
				t.Fatalf("x = %+v, want holders %v waiters %v", x, tt.want, tt.wait)
			}
		})
	}
}

func TestElection_Behaviour(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0)) // 1..3
	}
	runSteps(t, h, []step{
		{c: campaign("a", "e", "va", 0), granted: true, token: 4},
		{c: campaign("a", "e", "other", time.Minute), granted: true, token: 4},
		{c: campaign("b", "e", "vb", time.Minute)},  // 6
		{c: campaign("c", "e", "vc", time.Minute)},  // 7
		{c: campaign("b", "e", "vb2", time.Minute)}, // 8: retry, keeps its place and value
		{c: proclaim("a", "e", "va2")},              // 9
	})
	e := h.f.Election("e")
	if e.Value != "va2" || e.ModifyIndex != 9 || e.Mode != Exclusive || !slices.Equal(waiters(e), []string{"b", "c"}) {
		t.Fatalf("e = %+v", e)
	}
	if !h.f.CheckElection("e", 4) || h.f.Check("e", 4) {
		t.Fatal("election token checks against the wrong namespace")
	}
	runSteps(t, h, []step{
		{c: resign("c", "e")}, // 10: candidate leaves
		{c: resign("a", "e")}, // 11: b leads
		{c: cancelCampaign("b", "e"), granted: true, token: 11}, // already leader
		{c: campaign("c", "e", "vc", 0), err: ErrLockHeld},      // 13
		{c: acquire("c", "e", "", 0), granted: true, token: 14}, // locks are another namespace
	})
	e = h.f.Election("e")
	if !slices.Equal(holders(e), []string{"b:11"}) || e.Value != "vb" || e.Waiters != nil {
		t.Fatalf("e = %+v", e)
	}
	h.mustApply(resign("b", "e")) // 15
	if got := h.f.Election("e"); got.ModifyIndex != 15 || got.Holders != nil || len(h.f.Elections()) != 0 {
		t.Fatalf("after last resign: %+v", got)
	}
	if h.f.ElectionsIndex() != 15 || h.f.LocksIndex() != 14 {
		t.Fatalf("indexes: elections %d locks %d", h.f.ElectionsIndex(), h.f.LocksIndex())
	}
}

func TestLock_MissingReadsAsFree(t *testing.T) {
	h := newHarness(t)
	if got := h.f.Lock("x"); !equalLock(got, Lock{Name: "x"}) {
		t.Fatalf("empty FSM: %+v", got)
	}
	h.mustApply(create("a", 0))           // 1
	h.mustApply(acquire("a", "y", "", 0)) // 2
	h.mustApply(acquire("a", "x", "", 0)) // 3
	h.mustApply(release("a", "x"))        // 4: x deleted
	h.mustApply(Command{Op: OpSetMember, Member: &Member{ID: "n"}})
	for _, name := range []string{"x", "never"} {
		if got := h.f.Lock(name); !equalLock(got, Lock{Name: name, ModifyIndex: 4}) {
			t.Fatalf("Lock(%q) = %+v, want free at 4", name, got)
		}
	}
	if got := h.f.Election("x"); got.ModifyIndex != 0 {
		t.Fatalf("elections index moved with locks: %+v", got)
	}
	if got := h.f.Locks(); len(got) != 1 || got[0].Name != "y" {
		t.Fatalf("Locks() = %+v", got)
	}
}

func TestLock_TokensStrictlyIncrease(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	var tokens []uint64
	for i := range 10 {
		holder, other := "a", "b"
		if i%2 == 1 {
			holder, other = other, holder
		}
		res := h.mustApply(acquire(holder, "x", "", 0))
		h.mustApply(acquire(other, "x", "", time.Minute))
		tokens = append(tokens, res.Token)
		h.mustApply(release(holder, "x")) // hands off to other
		tokens = append(tokens, h.f.Lock("x").Holders[0].Token)
		if h.f.Check("x", res.Token) || !h.f.Check("x", tokens[len(tokens)-1]) {
			t.Fatalf("Check disagrees after hand-off at %d", h.idx)
		}
		h.mustApply(release(other, "x"))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens not increasing: %v", tokens)
		}
	}
}

// equalLock compares locks, times by instant.
func equalLock(a, b Lock) bool {
	return a.Name == b.Name && a.Mode == b.Mode && a.Value == b.Value &&
		a.ModifyIndex == b.ModifyIndex && a.DelayUntil.Equal(b.DelayUntil) &&
		slices.EqualFunc(a.Holders, b.Holders, func(x, y Holder) bool {
			return x.Session == y.Session && x.Token == y.Token && x.AcquiredAt.Equal(y.AcquiredAt)
		}) &&
		slices.Equal(a.Waiters, b.Waiters)
}
