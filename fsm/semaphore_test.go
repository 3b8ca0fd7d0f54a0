package fsm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// sem is an acquire of one of limit slots of a semaphore.
func sem(session, name string, limit int, wait time.Duration) Command {
	c := acquire(session, name, "", wait)
	c.Limit = limit
	return c
}

// slotRef names the delayed slot session left on semaphore name when it
// expired in entry armed.
func slotRef(name, session string, armed uint64) TimerRef {
	return TimerRef{Name: name, Session: session, Slot: true, Armed: armed}
}

// slots renders the delayed slots of l as "session@index".
func slots(l Lock) []string {
	var out []string
	for _, d := range l.Slots {
		out = append(out, fmt.Sprintf("%s@%d", d.Session, d.Index))
	}
	return out
}

// Every holder and waiter of a lock agrees on its limit: an acquire with
// another one, while the lock has holders, waiters or delayed slots, is
// refused as a bad command and changes nothing; a limit out of bounds, on
// a campaign, or with mode shared is refused too. Once the lock is gone,
// another limit is fine.
func TestSemaphore_LimitAgreement(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c"} {
		h.mustApply(create(id, 0))
	}
	h.mustApply(create("d", 10*time.Second))
	h.mustApply(sem("a", "s", 2, 0))             // 5: s is a semaphore of 2
	h.mustApply(acquire("a", "x", Exclusive, 0)) // 6: x an exclusive lock
	h.mustApply(sem("d", "q", 1, 0))             // 7: d holds q's one slot ...
	h.mustApply(expire("d"))                     // 8: ... and expires: q exists only by its delayed slot
	shared := sem("b", "s", 2, 0)
	shared.Mode = Shared
	bad := []struct {
		name string
		c    Command
		err  error
	}{
		{"another limit on a semaphore", sem("b", "s", 3, 0), ErrLimitConflict},
		{"no limit on a semaphore", acquire("b", "s", Exclusive, 0), ErrLimitConflict},
		{"a limit on an exclusive lock", sem("b", "x", 2, time.Minute), ErrLimitConflict},
		{"the holder with another limit", sem("a", "s", 3, 0), ErrLimitConflict},
		{"another limit on delayed slots alone", sem("b", "q", 2, 0), ErrLimitConflict},
		{"a negative limit", sem("b", "n", -1, 0), ErrBadCommand},
		{"a limit over the bound", sem("b", "n", MaxLimit+1, 0), ErrBadCommand},
		{"a shared semaphore", shared, ErrBadCommand},
		{"a campaign with a limit", Command{Op: OpCampaign, Session: "b", Name: "e", Limit: 2}, ErrBadCommand},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			before := mustStateJSON(t, h.f)
			tt.c.Now = h.now
			refusal := h.f.Refusal(tt.c)
			res := h.apply(tt.c)
			if !errors.Is(res.Err, tt.err) || res.Granted {
				t.Fatalf("%+v, want %v", res, tt.err)
			}
			if refusal == nil || refusal.Error() != res.Err.Error() {
				t.Fatalf("Refusal said %v, Apply %v", refusal, res.Err)
			}
			if after := mustStateJSON(t, h.f); !bytes.Equal(before, after) {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	if res := h.apply(sem("b", "s", 3, 0)); !strings.Contains(res.Err.Error(), "s has limit 2") {
		t.Errorf("message %q does not name the lock's limit", res.Err)
	}
	// With a new request number the refusal is recorded, as a try of a
	// held lock is, so that a late copy cannot be granted once s is gone.
	late := seqd(sem("b", "s", 3, 0), 1)
	late.Now = h.now
	if err := h.f.Refusal(late); err != nil {
		t.Fatalf("Refusal of a conflict with a new number = %v, want nil (it records the number)", err)
	}
	if res := h.apply(late); !errors.Is(res.Err, ErrLimitConflict) {
		t.Fatalf("conflict with a number: %+v", res)
	}
	h.mustApply(release("a", "s"))
	if res := h.apply(late); !errors.Is(res.Err, ErrRepeated) {
		t.Fatalf("late copy once s is free: %+v, want a repeat", res)
	}
	if res := h.mustApply(sem("b", "s", 3, 0)); !res.Granted || h.f.Lock("s").Limit != 3 {
		t.Fatalf("s free again, limit 3: %+v, %+v", res, h.f.Lock("s"))
	}
	checkInvariants(t, h.f)
}

// Up to N sessions hold a semaphore at once, each with the token of the
// entry that granted it; the next try is refused, the next blocking
// acquire queues, and a holder's repeat answers its own token.
func TestSemaphore_NHolders(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		h.mustApply(create(id, 0))
	}
	runSteps(t, h, []step{
		{c: sem("a", "s", 3, 0), granted: true, token: 5},
		{c: sem("b", "s", 3, 0), granted: true, token: 6},
		{c: sem("c", "s", 3, time.Minute), granted: true, token: 7},
		{c: sem("d", "s", 3, 0), err: ErrLockHeld},
		{c: sem("b", "s", 3, 0), granted: true, token: 6},
		{c: sem("d", "s", 3, time.Minute)}, // queued
	})
	s := h.f.Lock("s")
	if !slices.Equal(holders(s), []string{"a:5", "b:6", "c:7"}) || !slices.Equal(waiters(s), []string{"d"}) || s.Mode != Exclusive || s.Limit != 3 {
		t.Fatalf("s = %+v", s)
	}
	for _, tok := range []uint64{5, 6, 7} {
		if !h.f.Check("s", tok) {
			t.Errorf("token %d of a holder does not check", tok)
		}
	}
	if h.f.Check("s", 9) {
		t.Error("the waiter's entry checks as a token")
	}
	if c := h.f.Counts(); c.LockHolders != 3 || c.LocksHeld != 1 || c.LockWaiters != 1 {
		t.Errorf("counts %+v", c)
	}
}

// A release hands the freed slot to the first waiter in the same entry,
// one waiter per freed slot, first in first out; destroying a holder's
// session frees its slot at once, without a lock-delay.
func TestSemaphore_FIFOHandOffOnePerEntry(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		h.mustApply(create(id, 30*time.Second))
	}
	runSteps(t, h, []step{
		{c: sem("a", "s", 2, 0), granted: true, token: 6},
		{c: sem("b", "s", 2, 0), granted: true, token: 7},
		{c: sem("c", "s", 2, time.Minute)},
		{c: sem("d", "s", 2, time.Minute)},
		{c: sem("e", "s", 2, time.Minute)},
	})
	res := h.mustApply(release("a", "s")) // 11
	if s := h.f.Lock("s"); !slices.Equal(holders(s), []string{"b:7", "c:11"}) || !slices.Equal(waiters(s), []string{"d", "e"}) {
		t.Fatalf("after a's release: %+v", s)
	}
	if res.Activity.Handoffs != 1 {
		t.Fatalf("release activity %+v, want one hand-off", res.Activity)
	}
	h.mustApply(destroy("b")) // 12: no lock-delay on a destroy
	if s := h.f.Lock("s"); !slices.Equal(holders(s), []string{"c:11", "d:12"}) || !slices.Equal(waiters(s), []string{"e"}) || s.Slots != nil {
		t.Fatalf("after b's destroy: %+v", s)
	}
	h.mustApply(cancelWait("e", "s"))
	h.mustApply(release("c", "s"))
	h.mustApply(release("d", "s"))
	if s := h.f.Lock("s"); len(s.Holders) != 0 || s.Limit != 0 || len(h.f.Locks()) != 0 {
		t.Fatalf("s after everyone left: %+v, locks %v", s, h.f.Locks())
	}
	checkInvariants(t, h.f)
}

// When a holder's session expires, its slot stays ungrantable for that
// session's lock-delay, while the other free slots stay grantable; a try
// that finds only delayed slots is refused with the delay of the one that
// started first; each delay ends only by the timer that names it, which
// hands its slot to the first waiter in that entry.
func TestSemaphore_PerSlotLockDelay(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 30*time.Second)) // 1
	h.mustApply(create("b", 10*time.Second)) // 2
	for _, id := range []string{"c", "d", "e"} {
		h.mustApply(create(id, 0)) // 3..5
	}
	h.mustApply(sem("a", "s", 3, 0)) // 6
	h.mustApply(sem("b", "s", 3, 0)) // 7
	h.advance(time.Second)
	h.mustApply(expire("a")) // 8: a's slot delayed for 30s
	s := h.f.Lock("s")
	if !slices.Equal(holders(s), []string{"b:7"}) || !slices.Equal(slots(s), []string{"a@8"}) || !s.Slots[0].Until.Equal(h.now.Add(30*time.Second)) {
		t.Fatalf("after a's expiry: %+v", s)
	}
	// One slot is neither held nor delayed: c gets it at once.
	if res := h.mustApply(sem("c", "s", 3, 0)); !res.Granted || res.Token != 9 {
		t.Fatalf("c: %+v", res)
	}
	// Now b and c hold, and a's slot is delayed: d's try names a's delay.
	res := h.apply(sem("d", "s", 3, 0)) // 10
	var de *DelayError
	if !errors.As(res.Err, &de) || de.Ref != slotRef("s", "a", 8) || de.Length != 30*time.Second {
		t.Fatalf("d's try: %+v", res)
	}
	if s := s2(h); s.PendingDelay(false) == nil || s.PendingDelay(false).Ref != de.Ref {
		t.Fatalf("PendingDelay %+v, want %+v", s.PendingDelay(false), de)
	}
	if pd := (&Lock{}).PendingDelay(false); pd != nil {
		t.Fatalf("PendingDelay of a free lock: %+v", pd)
	}
	h.mustApply(sem("d", "s", 3, time.Minute)) // 11: d queues
	h.mustApply(expire("b"))                   // 12: b's slot delayed for 10s; nothing free
	if s := s2(h); !slices.Equal(holders(s), []string{"c:9"}) || !slices.Equal(slots(s), []string{"a@8", "b@12"}) || !slices.Equal(waiters(s), []string{"d"}) {
		t.Fatalf("after b's expiry: %+v", s)
	}
	want := []Timer{{slotRef("s", "a", 8), 30 * time.Second}, {slotRef("s", "b", 12), 10 * time.Second}, {TimerRef{Name: "s", Session: "d", Armed: 11}, time.Minute}}
	if got := h.f.Timers(); !slices.Equal(got, want) {
		t.Fatalf("timers %+v, want %+v", got, want)
	}
	// Refs that do not name a running delay change nothing: a stale
	// entry, the lock-delay of the whole lock, a slot under another
	// session.
	before := mustStateJSON(t, h.f)
	h.mustApply(due(slotRef("s", "a", 7), TimerRef{Name: "s", Armed: 8}, slotRef("s", "c", 8), slotRef("s", "d", 11)))
	if after := mustStateJSON(t, h.f); !bytes.Equal(before, after) {
		t.Fatalf("stale refs changed the state:\n%s\n%s", before, after)
	}
	// b's delay ends first: its slot goes to d in that entry.
	res = h.mustApply(due(slotRef("s", "b", 12))) // 14
	if s := s2(h); !slices.Equal(holders(s), []string{"c:9", "d:14"}) || !slices.Equal(slots(s), []string{"a@8"}) || len(s.Waiters) != 0 {
		t.Fatalf("after b's delay: %+v", s)
	}
	if res.Activity.Handoffs != 1 || !slices.Equal(res.Activity.AfterExpiry, []string{"s"}) {
		t.Fatalf("activity %+v", res.Activity)
	}
	// The same ref again is harmless.
	h.mustApply(due(slotRef("s", "b", 12)))
	h.mustApply(release("c", "s"))
	h.mustApply(release("d", "s"))
	// s exists by a's delayed slot alone, until its timer.
	if s := s2(h); len(s.Holders) != 0 || !slices.Equal(slots(s), []string{"a@8"}) || s.Limit != 3 {
		t.Fatalf("s with only a delayed slot: %+v", s)
	}
	if res := h.mustApply(sem("e", "s", 3, 0)); !res.Granted {
		t.Fatalf("e, with two slots free beside a's delayed one: %+v", res)
	}
	h.mustApply(release("e", "s"))
	h.mustApply(due(slotRef("s", "a", 8)))
	if len(h.f.Locks()) != 0 || len(h.f.Timers()) != 0 {
		t.Fatalf("locks %+v timers %+v after every delay ended", h.f.Locks(), h.f.Timers())
	}
	checkInvariants(t, h.f)
}

func s2(h *harness) Lock { return h.f.Lock("s") }

// Sessions expiring in one entry each leave their own delayed slot,
// named by the session, each with its own length and ended by its own
// timer; a session of lock-delay 0 leaves none, and a waiter behind gets
// that slot in the same entry.
func TestSemaphore_ExpiriesInOneEntry(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 20*time.Second)) // 1
	h.mustApply(create("b", 5*time.Second))  // 2
	h.mustApply(create("c", 0))              // 3
	h.mustApply(create("d", 0))              // 4
	h.mustApply(sem("a", "s", 3, 0))
	h.mustApply(sem("b", "s", 3, 0))
	h.mustApply(sem("c", "s", 3, 0))
	h.mustApply(sem("d", "s", 3, time.Minute)) // 8: queued
	res := h.mustApply(expireAll("a", "b", "c"))
	s := s2(h)
	if !slices.Equal(holders(s), []string{"d:9"}) || !slices.Equal(slots(s), []string{"a@9", "b@9"}) {
		t.Fatalf("after the expiries: %+v", s)
	}
	if res.Activity.Handoffs != 1 {
		t.Fatalf("activity %+v", res.Activity)
	}
	want := []Timer{{slotRef("s", "a", 9), 20 * time.Second}, {slotRef("s", "b", 9), 5 * time.Second}}
	if got := h.f.Timers(); !slices.Equal(got, want) {
		t.Fatalf("timers %+v, want %+v", got, want)
	}
	h.mustApply(due(slotRef("s", "b", 9)))
	if s := s2(h); !slices.Equal(slots(s), []string{"a@9"}) {
		t.Fatalf("after b's delay: %+v", s)
	}
	checkInvariants(t, h.f)
}

// Request numbers work on a semaphore as on a lock: a retry answers the
// first grant's token, a late acquire after the release does not grant
// again, and a late release does not drop a new holding.
func TestSemaphore_RequestNumbers(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	first := h.mustApply(seqd(sem("a", "s", 2, 0), 1))
	if again := h.mustApply(seqd(sem("a", "s", 2, 0), 1)); !again.Granted || again.Token != first.Token {
		t.Fatalf("retry: %+v, first %+v", again, first)
	}
	h.mustApply(seqd(release("a", "s"), 2))
	h.mustApply(sem("b", "s", 2, 0)) // s exists, a slot free
	if res := h.apply(seqd(sem("a", "s", 2, 0), 1)); res.Err == nil || res.Granted {
		t.Fatalf("late acquire after release: %+v", res)
	}
	re := h.mustApply(seqd(sem("a", "s", 2, 0), 3))
	if res := h.apply(seqd(release("a", "s"), 2)); !errors.Is(res.Err, ErrNotHolder) || h.f.Lock("s").Holders[1].Token != re.Token {
		t.Fatalf("late release: %+v, s %+v", res, h.f.Lock("s"))
	}
}

// A semaphore with holders, waiters and delayed slots survives a
// snapshot: the restored FSM encodes the same, lists the same timers and
// answers the next entries as the original does.
func TestSemaphore_SnapshotRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 30*time.Second))
	for _, id := range []string{"b", "c", "d"} {
		h.mustApply(create(id, 0))
	}
	h.mustApply(sem("a", "s", 2, 0))
	h.mustApply(sem("b", "s", 2, 0))
	h.mustApply(sem("c", "s", 2, time.Minute))
	h.mustApply(expire("a"))
	h.mustApply(sem("d", "s", 2, time.Minute))
	snap := mustSnapshot(t, h.f)
	if !bytes.Contains(snap, fmt.Appendf(nil, `"version":%d`, snapshotVersion)) || !bytes.Contains(snap, []byte(`"limit":2`)) || !bytes.Contains(snap, []byte(`"delayed_slots"`)) {
		t.Fatalf("snapshot %s", snap)
	}
	g := mustRestore(t, snap)
	checkInvariants(t, g)
	if again := mustSnapshot(t, g); !bytes.Equal(again, snap) {
		t.Fatalf("restored encodes as\n%s\nwant\n%s", again, snap)
	}
	if !slices.Equal(g.Timers(), h.f.Timers()) {
		t.Fatalf("timers %+v, want %+v", g.Timers(), h.f.Timers())
	}
	for _, c := range []Command{due(slotRef("s", "a", 8)), release("b", "s"), sem("b", "s", 2, 0)} {
		c.Now = h.now
		next := h.idx + 1
		ra, rb := h.apply(c), g.ApplyCommand(next, c)
		if describe(ra) != describe(rb) {
			t.Fatalf("%v: original %s, restored %s", c.Op, describe(ra), describe(rb))
		}
	}
	if !bytes.Equal(mustSnapshot(t, h.f), mustSnapshot(t, g)) {
		t.Fatal("states differ after the same entries")
	}
}

// A snapshot claiming an older version may not hold a semaphore, and a
// semaphore that breaks the rules the commands keep is refused.
func TestSemaphore_RestoreRejects(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 30*time.Second))
	h.mustApply(create("b", 0))
	h.mustApply(create("c", 0))
	h.mustApply(sem("a", "s", 2, 0))
	h.mustApply(sem("b", "s", 2, 0))
	h.mustApply(expire("a"))
	h.mustApply(sem("c", "s", 2, time.Minute))
	good := mustSnapshot(t, h.f)
	mutate := func(change func(f *snapshotFile, s *Lock)) string {
		var file snapshotFile
		if err := json.Unmarshal(good, &file); err != nil {
			t.Fatal(err)
		}
		change(&file, &file.Locks[0])
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, data := range map[string]string{
		"version 5 with a semaphore":  mutate(func(f *snapshotFile, s *Lock) { f.Version = 5 }),
		"limit over the bound":        mutate(func(f *snapshotFile, s *Lock) { s.Limit = MaxLimit + 1 }),
		"more holders than the limit": mutate(func(f *snapshotFile, s *Lock) { s.Limit = 1 }),
		"delayed slots without limit": mutate(func(f *snapshotFile, s *Lock) { s.Limit = 0 }),
		"a shared semaphore":          mutate(func(f *snapshotFile, s *Lock) { s.Mode = Shared }),
		"a whole-lock delay as well":  mutate(func(f *snapshotFile, s *Lock) { s.Delay, s.DelayIndex, s.DelayUntil = time.Second, 6, t0 }),
		"a slot without a length":     mutate(func(f *snapshotFile, s *Lock) { s.Slots[0].Length = 0 }),
		"a slot from the future":      mutate(func(f *snapshotFile, s *Lock) { s.Slots[0].Index = f.AppliedIndex + 1 }),
		"a waiter behind a free slot": mutate(func(f *snapshotFile, s *Lock) { s.Limit = 3 }),
		"a semaphore election": mutate(func(f *snapshotFile, s *Lock) {
			f.Elections = append(f.Elections, *s)
			f.Locks = nil
		}),
	} {
		t.Run(name, func(t *testing.T) {
			if err := New().Restore(strings.NewReader(data)); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err %v, want ErrBadSnapshot", err)
			}
		})
	}
}

// testdata/version5-log.json.gz is a random log written by the build
// before semaphores (snapshot version 5; its entries, as every entry
// since, version 2), with what that build answered to each entry and the
// snapshot it ended with. It replays here to the same answers and the
// same state, the version number of the snapshot aside.
func TestVersion5Log_ReplaysAsRecorded(t *testing.T) {
	var rec struct {
		Entries  []string        `json:"entries"`
		Results  []string        `json:"results"`
		Snapshot json.RawMessage `json:"snapshot"`
	}
	readGzipJSON(t, "testdata/version5-log.json.gz", &rec)
	f := New()
	for i, enc := range rec.Entries {
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(f.Apply(uint64(i+1), data)); got != rec.Results[i] {
			t.Fatalf("entry %d: %s, recorded %s", i+1, got, rec.Results[i])
		}
	}
	want := bytes.Replace(rec.Snapshot, []byte(`"version":5`), []byte(fmt.Sprintf(`"version":%d`, snapshotVersion)), 1)
	if got := mustSnapshot(t, f); !bytes.Equal(got, want) {
		t.Fatalf("final state differs from the recorded one:\n got %s\nwant %s", got, want)
	}
	// And the recorded snapshot restores to that state.
	if got := mustSnapshot(t, mustRestore(t, rec.Snapshot)); !bytes.Equal(got, want) {
		t.Fatalf("recorded snapshot restores as\n%s", got)
	}
}

// semaphoreLog returns n commands drawn from seed that work two
// semaphores hard: acquires that mostly agree on the limit, tries and
// blocking ones, let-gos, cancels, expiries of sessions with and without
// a lock-delay (one at a time and in batches), destroys, and timers that
// run out (the pending ones of the state so far, seen through a scratch
// FSM, some stale), with request numbers new and repeated.
func semaphoreLog(seed uint64, n int) []Command {
	rng := rand.New(rand.NewPCG(seed, 27))
	scratch := New()
	ids := []string{"a", "b", "c", "d", "e", "f"}
	now := t0
	var out []Command
	for len(out) < n {
		now = now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
		id := ids[rng.IntN(len(ids))]
		name := []string{"s0", "s1"}[rng.IntN(2)]
		limit := map[string]int{"s0": 2, "s1": 3}[name]
		c := Command{Now: now, Session: id, Name: name}
		_, live := scratch.Session(id)
		switch r := rng.IntN(100); {
		case !live && r < 80, r < 4:
			c = Command{Now: now, Op: OpCreateSession, Session: id, TTL: time.Second, LockDelay: []time.Duration{0, 2 * time.Second, 5 * time.Second}[rng.IntN(3)]}
		case r < 50:
			c.Op, c.Limit, c.Wait = OpAcquire, limit, []time.Duration{0, 0, 10 * time.Second}[rng.IntN(3)]
			if rng.IntN(10) == 0 {
				c.Limit = rng.IntN(4)
			}
		case r < 65:
			c.Op = OpLetGo
		case r < 68:
			c.Op = OpCancelWait
		case r < 76:
			c = Command{Now: now, Op: OpExpireSession, Session: id}
		case r < 80:
			c = Command{Now: now, Op: OpExpireSessions, Sessions: []string{id, ids[rng.IntN(len(ids))]}}
		case r < 83:
			c = Command{Now: now, Op: OpDestroySession, Session: id}
		default:
			timers := scratch.Timers()
			if len(timers) == 0 {
				continue
			}
			c = Command{Now: now, Op: OpTimersDue}
			for len(c.Timers) == 0 || rng.IntN(2) == 0 {
				r := timers[rng.IntN(len(timers))].TimerRef
				if rng.IntN(8) == 0 {
					r.Armed++
				}
				c.Timers = append(c.Timers, r)
			}
		}
		if c.Op != OpCreateSession && rng.IntN(2) == 0 {
			c.Seq = uint64(rng.IntN(len(out) + 1))
		}
		scratch.ApplyCommand(uint64(len(out)+1), c)
		out = append(out, c)
	}
	return out
}

// On semaphore-heavy random logs: two replicas (one restored from a
// snapshot half-way) answer every entry alike and end in the same state,
// the invariants hold after every entry, and whenever Refusal names a
// refusal, Apply answers exactly that and changes nothing.
func TestSemaphore_RandomLogs(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 8; seed++ {
		log := semaphoreLog(seed, 1500)
		a, b := New(), New()
		for i, c := range log {
			index := uint64(i + 1)
			if i == len(log)/2 {
				b = mustRestore(t, mustSnapshot(t, b))
			}
			refusal := a.Refusal(c)
			var before []byte
			if refusal != nil {
				before = mustStateJSON(t, a)
			}
			ra := a.ApplyCommand(index, c)
			if refusal != nil {
				if ra.Err == nil || ra.Err.Error() != refusal.Error() {
					t.Fatalf("seed %d entry %d %v: Refusal said %v, Apply %s", seed, index, c.Op, refusal, describe(ra))
				}
				if !bytes.Equal(before, mustStateJSON(t, a)) {
					t.Fatalf("seed %d entry %d: refused as %v, yet the state changed", seed, index, refusal)
				}
				seen["told in advance: "+refusalKind(refusal)]++
			}
			if rb := b.ApplyCommand(index, c); describe(ra) != describe(rb) {
				t.Fatalf("seed %d entry %d: results differ:\n%s\n%s", seed, index, describe(ra), describe(rb))
			}
			checkInvariants(t, a)
			var de *DelayError
			if errors.As(ra.Err, &de) && de.Ref.Slot {
				seen["slot delay"]++
			}
			if errors.Is(ra.Err, ErrLimitConflict) {
				seen["limit conflict"]++
			}
			for _, l := range a.Locks() {
				if len(l.Holders) == l.Limit {
					seen["full"]++
				}
				if len(l.Slots) > 1 {
					seen["several delayed slots"]++
				}
				for _, h := range l.Holders {
					if h.Token == index && c.Op != OpAcquire {
						seen["hand-off by "+c.Op.String()]++
					}
				}
			}
		}
		if sa, sb := mustSnapshot(t, a), mustSnapshot(t, b); !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: snapshots differ:\n%s\n%s", seed, sa, sb)
		}
	}
	t.Logf("%v", seen)
	for _, k := range []string{"slot delay", "limit conflict", "full", "several delayed slots", "told in advance: slot delay", "told in advance: held",
		"hand-off by let-go", "hand-off by timers-due", "hand-off by destroy-session", "hand-off by expire-session"} {
		if seen[k] == 0 {
			t.Errorf("never saw %q: %v", k, seen)
		}
	}
}
