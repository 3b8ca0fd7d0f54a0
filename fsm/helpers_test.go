package fsm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// t0 is the wall time every test starts at.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// harness applies commands to one FSM through the encoded log path, with
// indexes 1, 2, 3... and a wall clock the test moves by hand. With v1 set it
// writes version-1 entries, as builds that decided by wall time did.
type harness struct {
	t   testing.TB
	f   *FSM
	idx uint64
	now time.Time
	v1  bool
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, f: New(), now: t0}
}

// apply encodes c, stamped with the harness's time unless it has its own,
// and applies it at the next index.
func (h *harness) apply(c Command) Result {
	h.t.Helper()
	if c.Now.IsZero() {
		c.Now = h.now
	}
	version := Version
	if h.v1 {
		version = version1
	}
	b, err := encodeVersion(c, version)
	if err != nil {
		h.t.Fatalf("encode %v: %v", c.Op, err)
	}
	h.idx++
	res := h.f.Apply(h.idx, b)
	if res.Index != h.idx {
		h.t.Fatalf("%v: result index %d, want %d", c.Op, res.Index, h.idx)
	}
	return res
}

// mustApply applies c and fails the test if it is refused.
func (h *harness) mustApply(c Command) Result {
	h.t.Helper()
	res := h.apply(c)
	if res.Err != nil {
		h.t.Fatalf("entry %d %v: %v", h.idx, c.Op, res.Err)
	}
	return res
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

// Command builders, to keep the tables readable.

func create(id string, lockDelay time.Duration) Command {
	return Command{Op: OpCreateSession, Session: id, TTL: 10 * time.Second, LockDelay: lockDelay}
}

func acquire(session, name string, mode Mode, wait time.Duration) Command {
	return Command{Op: OpAcquire, Session: session, Name: name, Mode: mode, Wait: wait}
}

func release(session, name string) Command {
	return Command{Op: OpLetGo, Session: session, Name: name}
}

// oldRelease is the release older builds wrote, which left a queued
// session queued.
func oldRelease(session, name string) Command {
	return Command{Op: OpRelease, Session: session, Name: name}
}

func cancelWait(session, name string) Command {
	return Command{Op: OpCancelWait, Session: session, Name: name}
}

func campaign(session, name, value string, wait time.Duration) Command {
	return Command{Op: OpCampaign, Session: session, Name: name, Value: value, Wait: wait}
}

func proclaim(session, name, value string) Command {
	return Command{Op: OpProclaim, Session: session, Name: name, Value: value}
}

func resign(session, name string) Command {
	return Command{Op: OpResign, Session: session, Name: name}
}

func cancelCampaign(session, name string) Command {
	return Command{Op: OpCancelCampaign, Session: session, Name: name}
}

func tick() Command                  { return Command{Op: OpTick} }
func due(refs ...TimerRef) Command   { return Command{Op: OpTimersDue, Timers: refs} }
func destroy(session string) Command { return Command{Op: OpDestroySession, Session: session} }
func expire(session string) Command  { return Command{Op: OpExpireSession, Session: session} }

// step is one command of a scripted test and what it must return.
type step struct {
	advance time.Duration // moved on the clock before the command
	c       Command
	granted bool
	token   uint64 // checked when granted
	err     error  // matched with errors.Is; nil means success
}

// runSteps applies the steps in order, checking each result and the
// state's invariants after each.
func runSteps(t *testing.T, h *harness, steps []step) {
	t.Helper()
	for _, s := range steps {
		h.advance(s.advance)
		res := h.apply(s.c)
		if !errors.Is(res.Err, s.err) {
			t.Fatalf("entry %d %v: err %v, want %v", h.idx, s.c.Op, res.Err, s.err)
		}
		if res.Granted != s.granted || (s.granted && res.Token != s.token) {
			t.Fatalf("entry %d %v: granted %v token %d, want %v %d",
				h.idx, s.c.Op, res.Granted, res.Token, s.granted, s.token)
		}
		checkInvariants(t, h.f)
	}
}

func mustSnapshot(t testing.TB, f *FSM) []byte {
	t.Helper()
	b, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return b
}

func mustRestore(t testing.TB, b []byte) *FSM {
	t.Helper()
	f := New()
	if err := f.Restore(bytes.NewReader(b)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return f
}

// mustStateJSON returns the snapshot without the applied index: what a
// refused command must leave unchanged.
func mustStateJSON(t testing.TB, f *FSM) []byte {
	t.Helper()
	var file snapshotFile
	if err := json.Unmarshal(mustSnapshot(t, f), &file); err != nil {
		t.Fatalf("decode snapshot: %v", err)
	}
	file.AppliedIndex = 0
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatalf("encode snapshot: %v", err)
	}
	return b
}

// holders returns "session:token" for each holder of l, for compact checks.
func holders(l Lock) []string {
	var out []string
	for _, h := range l.Holders {
		out = append(out, h.Session+":"+strconv.FormatUint(h.Token, 10))
	}
	return out
}

func waiters(l Lock) []string {
	var out []string
	for _, w := range l.Waiters {
		out = append(out, w.Session)
	}
	return out
}

// checkInvariants fails the test if the state breaks a rule the commands
// are meant to keep, including the reverse indexes and timed sets matching
// the objects.
func checkInvariants(t testing.TB, f *FSM) {
	t.Helper()
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, s := range []*space{f.st.locks, f.st.elections} {
		held := make(map[string]map[string]struct{})
		waiting := make(map[string]map[string]struct{})
		timed := make(map[string]struct{})
		var holders, heldObjs, waiters int
		for name, l := range s.objs.all() {
			checkObject(t, s, f.st, name, l)
			holders, waiters = holders+len(l.Holders), waiters+len(l.Waiters)
			heldObjs += min(len(l.Holders), 1)
			for _, h := range l.Holders {
				addRef(held, h.Session, name)
			}
			for _, w := range l.Waiters {
				addRef(waiting, w.Session, name)
			}
			if l.timed() {
				timed[name] = struct{}{}
			}
		}
		if !reflect.DeepEqual(held, s.held) || !reflect.DeepEqual(waiting, s.waiting) {
			t.Fatalf("reverse index out of step: held %v want %v, waiting %v want %v", s.held, held, s.waiting, waiting)
		}
		if holders != s.holders || heldObjs != s.heldObjs || waiters != s.waiters {
			t.Fatalf("counts out of step: holders %d, held %d, waiters %d; the objects have %d, %d, %d",
				s.holders, s.heldObjs, s.waiters, holders, heldObjs, waiters)
		}
		if !maps.Equal(timed, s.timed) {
			t.Fatalf("timed set %v, want %v", s.timed, timed)
		}
		if s.index > f.st.applied {
			t.Fatalf("namespace index %d after applied index %d", s.index, f.st.applied)
		}
	}
	// A bounded table's idle numbers are those of objects the session
	// neither holds nor queues for, at most its window of them; an
	// unbounded table has no floor.
	for id, tb := range f.st.seqs.all() {
		sess, ok := f.st.sessions.get(id)
		if !ok {
			t.Fatalf("request numbers of unknown session %q", id)
		}
		if sess.SeqWindow == 0 {
			if tb.floor != 0 || len(tb.idle) != 0 {
				t.Fatalf("unbounded session %q has a floor %d or idle numbers %v", id, tb.floor, tb.idle)
			}
			continue
		}
		if want := f.st.idleKeys(id, tb); !maps.Equal(tb.idle, want) || len(want) > sess.SeqWindow {
			t.Fatalf("session %q (window %d): idle %v, want %v", id, sess.SeqWindow, tb.idle, want)
		}
	}
	checkKV(t, f.st)
}

func checkObject(t testing.TB, s *space, st *state, name string, l *Lock) {
	t.Helper()
	if err := s.validate(*l, st.sessions); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if l.Name != name || l.ModifyIndex > s.index {
		t.Fatalf("%s: name %q, modify index %d > namespace index %d", name, l.Name, l.ModifyIndex, s.index)
	}
	for _, h := range l.Holders {
		if h.Token > st.applied {
			t.Fatalf("%s: token %d from the future (applied %d)", name, h.Token, st.applied)
		}
	}
	// Without a lock-delay, a waiter at the head that could be granted
	// would be starving behind a free lock: hand-off must have granted it.
	if l.DelayIndex == 0 && len(l.Waiters) > 0 && l.admits(l.Waiters[0].Mode) {
		t.Fatalf("%s: head waiter %s admissible but queued", name, l.Waiters[0].Session)
	}
	if s.election && len(l.Holders) > 1 {
		t.Fatalf("%s: election with %d leaders", name, len(l.Holders))
	}
	if !slices.IsSortedFunc(l.Holders, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) }) {
		t.Fatalf("%s: holders not in grant order", name)
	}
}
