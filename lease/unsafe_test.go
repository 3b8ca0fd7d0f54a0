//go:build lockd_unsafe

package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// EarlyExpiry: the leader lists a session as expired at 0.9 x TTL after its
// last keepalive with the switch, and not before the full TTL without it.
func TestUnsafe_EarlyExpiry(t *testing.T) {
	for _, on := range []bool{false, true} {
		clock := &manualClock{now: time.Unix(1000, 0)}
		term, f := newTestTerm(clock)
		term.n.cfg.Unsafe.EarlyExpiry = on
		mustApply(t, f, 1, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "s", TTL: 10 * time.Second})
		term.track("s", 10*time.Second)
		clock.advance(9500 * time.Millisecond)
		got := term.expired()
		if on && len(got) != 1 {
			t.Errorf("early-expiry on: expired at 0.95 x TTL = %v, want [s]", got)
		}
		if !on && len(got) != 0 {
			t.Errorf("early-expiry off: expired at 0.95 x TTL = %v, want none", got)
		}
	}
}

// ForgetGrant: acquire and campaign entries at or below the index the node
// had at start are skipped when replayed with the switch, and applied
// without it; later entries are always applied.
func TestUnsafe_ForgetGrant(t *testing.T) {
	enc := func(c fsm.Command) []byte {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	now := time.Unix(1000, 0)
	entries := [][]byte{
		enc(fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: "s", TTL: 10 * time.Second}),
		enc(fsm.Command{Op: fsm.OpAcquire, Now: now, Session: "s", Name: "a", Mode: fsm.Exclusive}),
		enc(fsm.Command{Op: fsm.OpCampaign, Now: now, Session: "s", Name: "e", Value: "v"}),
		enc(fsm.Command{Op: fsm.OpAcquire, Now: now, Session: "s", Name: "b", Mode: fsm.Exclusive}),
	}
	for _, on := range []bool{false, true} {
		a := raftFSM{f: fsm.New()}
		if on {
			a.unsafe = unsafeReplay{upTo: 3} // the node had entries 1-3 when it started
		}
		for i, data := range entries {
			a.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
		}
		held := func(l fsm.Lock) bool { return len(l.Holders) == 1 && l.Holders[0].Session == "s" }
		if got := held(a.f.Lock("a")); got == on {
			t.Errorf("forget-grant %v: lock a held after replay = %v", on, got)
		}
		if got := held(a.f.Election("e")); got == on {
			t.Errorf("forget-grant %v: election e led after replay = %v", on, got)
		}
		if !held(a.f.Lock("b")) {
			t.Errorf("forget-grant %v: lock b, granted after the start, is not held", on)
		}
		if _, ok := a.f.Session("s"); !ok {
			t.Errorf("forget-grant %v: the session was forgotten too", on)
		}
	}
}

// ObserveStale: blocking queries of an election answer, now and then, a
// leader older than one they answered before with the switch, and never
// without it; plain reads are never touched.
func TestUnsafe_ObserveStale(t *testing.T) {
	for _, on := range []bool{false, true} {
		f := fsm.New()
		n := &Node{cfg: validConfig(), clock: &manualClock{now: time.Unix(1000, 0)}, fsm: f}
		n.cfg.Unsafe.ObserveStale = on
		now := time.Unix(1000, 0)
		mustApply(t, f, 1, fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: "s1", TTL: 10 * time.Second})
		mustApply(t, f, 2, fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: "s2", TTL: 10 * time.Second})
		mustApply(t, f, 3, fsm.Command{Op: fsm.OpCampaign, Now: now, Session: "s1", Name: "e", Value: "one"})
		block := api.ReadOptions{Stale: true, Wait: time.Millisecond}
		ctx := context.Background()
		first, err := n.Election(ctx, "e", block)
		if err != nil || first.Token == 0 {
			t.Fatalf("first read: %+v, %v", first, err)
		}
		mustApply(t, f, 4, fsm.Command{Op: fsm.OpResign, Now: now, Session: "s1", Name: "e"})
		mustApply(t, f, 5, fsm.Command{Op: fsm.OpCampaign, Now: now, Session: "s2", Name: "e", Value: "two"})
		second, err := n.Election(ctx, "e", block)
		if err != nil || second.Token <= first.Token {
			t.Fatalf("second read: %+v, %v", second, err)
		}
		mustApply(t, f, 6, fsm.Command{Op: fsm.OpResign, Now: now, Session: "s2", Name: "e"})
		mustApply(t, f, 7, fsm.Command{Op: fsm.OpCampaign, Now: now, Session: "s2", Name: "e", Value: "three"})
		var back, plainBack int
		for range 2 * staleEvery {
			e, err := n.Election(ctx, "e", block)
			if err != nil {
				t.Fatal(err)
			}
			if e.Token < second.Token {
				back++
			}
			p, err := n.Election(ctx, "e", api.ReadOptions{Stale: true})
			if err != nil {
				t.Fatal(err)
			}
			if p.Value != "three" {
				plainBack++
			}
		}
		if on && back == 0 {
			t.Errorf("observe-stale on: no blocking answer went back to the older leader")
		}
		if !on && back != 0 {
			t.Errorf("observe-stale off: %d blocking answers went back", back)
		}
		if plainBack != 0 {
			t.Errorf("observe-stale %v: %d plain reads went back", on, plainBack)
		}
	}
}

// StaleGoesBack: ?stale reads of a lock answer, now and then, a state
// older than one they answered before with the switch, and never without
// it; default reads are never touched.
func TestUnsafe_StaleGoesBack(t *testing.T) {
	for _, on := range []bool{false, true} {
		f := fsm.New()
		n := &Node{cfg: validConfig(), clock: &manualClock{now: time.Unix(1000, 0)}, fsm: f}
		n.cfg.Unsafe.StaleGoesBack = on
		now := time.Unix(1000, 0)
		stale := api.ReadOptions{Stale: true}
		ctx := context.Background()
		mustApply(t, f, 1, fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: "s", TTL: 10 * time.Second})
		var seen uint64
		back := 0
		for i := uint64(2); i < 2+4*staleEvery; i += 2 {
			mustApply(t, f, i, fsm.Command{Op: fsm.OpAcquire, Now: now, Session: "s", Name: "l", Mode: fsm.Exclusive})
			l, err := n.Lock(ctx, "l", stale)
			if err != nil {
				t.Fatal(err)
			}
			if l.ModifyIndex < seen {
				back++
			}
			seen = max(seen, l.ModifyIndex)
			mustApply(t, f, i+1, fsm.Command{Op: fsm.OpRelease, Now: now, Session: "s", Name: "l"})
		}
		if on && back == 0 {
			t.Errorf("stale-goes-back on: no stale read went back")
		}
		if !on && back != 0 {
			t.Errorf("stale-goes-back off: %d stale reads went back", back)
		}
	}
}

// applyCounter is an engine that leads in term 1 and counts the entries
// it is asked to commit.
type applyCounter struct {
	leadingEngine
	mu      sync.Mutex
	entries int
}

func (e *applyCounter) apply([]byte, time.Duration) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entries++
	return fsm.Result{}, nil
}

// KeepaliveWrites: a keepalive commits an entry with the switch, and
// nothing without it.
func TestUnsafe_KeepaliveWrites(t *testing.T) {
	for _, on := range []bool{false, true} {
		clock := &manualClock{now: time.Unix(1000, 0)}
		eng := &applyCounter{}
		n := &Node{cfg: validConfig(), clock: clock, fsm: fsm.New(), eng: eng}
		n.cfg.Unsafe.KeepaliveWrites = on
		term := newLeaderTerm(n, 1)
		term.ready, term.leaseUntil = true, clock.Now().Add(time.Hour)
		n.term = term
		mustApply(t, n.fsm, 1, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "s", TTL: 10 * time.Second})
		term.track("s", 10*time.Second)
		for range 3 {
			if _, err := n.KeepAlive(context.Background(), "s"); err != nil {
				t.Fatal(err)
			}
		}
		if want := map[bool]int{false: 0, true: 3}[on]; eng.entries != want {
			t.Errorf("keepalive-writes %v: 3 keepalives committed %d entries, want %d", on, eng.entries, want)
		}
	}
}

// StaleLag: a lock's ?stale answer is the newest state first seen at least
// staleLag ago; it never goes back, and a new state shows only once it is
// that old.
func TestUnsafe_StaleLagStaysBehindNeverBack(t *testing.T) {
	var g lagBehind
	t0 := time.Unix(1000, 0)
	st := func(i uint64) api.Lock { return api.Lock{Name: "x", ModifyIndex: i} }
	steps := []struct {
		at   time.Duration
		now  uint64 // the state now
		want uint64 // what is answered
	}{
		{0, 1, 1},                        // nothing older: the oldest kept
		{time.Second, 2, 1},              // 2 is new
		{staleLag, 3, 1},                 // 1 is staleLag old, 2 is not yet
		{staleLag + time.Second, 3, 2},   // 2 is now
		{staleLag + 2*time.Second, 4, 2}, // 3 is not yet
		{2*staleLag + time.Second, 4, 3}, // 3 is
		{3 * staleLag, 4, 4},             // and 4
		{3*staleLag + time.Second, 4, 4}, // never back
	}
	for _, s := range steps {
		if got := g.answer("x", st(s.now), s.now, t0.Add(s.at)); got.ModifyIndex != s.want {
			t.Fatalf("at +%v with state %d: answered %d, want %d", s.at, s.now, got.ModifyIndex, s.want)
		}
	}
}

// DropWatchEvent: a stale watch answer leaves out the events whose index
// is a multiple of dropWatchEvery with the switch, and none without it.
func TestUnsafe_DropWatchEvent(t *testing.T) {
	for _, on := range []bool{false, true} {
		f := fsm.New()
		n := &Node{cfg: validConfig(), clock: &manualClock{now: time.Unix(1000, 0)}, fsm: f}
		n.cfg.Unsafe.DropWatchEvent = on
		put := fsm.Put([]byte("k"), []byte("v"))
		for i := uint64(1); i <= 2*dropWatchEvery; i++ {
			mustApply(t, f, i, fsm.Command{Op: fsm.OpTxn, Now: time.Unix(1000, 0), Txn: &fsm.Txn{Success: []fsm.TxnOp{put}}})
		}
		got, err := n.KVWatch(context.Background(), api.WatchOptions{ReadOptions: api.ReadOptions{Stale: true}, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		want := 2 * dropWatchEvery
		if on {
			want -= 2
		}
		if len(got.Events) != want {
			t.Errorf("drop-watch-event on=%v: %d events of %d writes, want %d", on, len(got.Events), 2*dropWatchEvery, want)
		}
		for _, e := range got.Events {
			if on && e.Index%dropWatchEvery == 0 {
				t.Errorf("drop-watch-event on: event %d delivered", e.Index)
			}
		}
	}
}
