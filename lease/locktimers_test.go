package lease

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// applyEngine commits by applying to the node's FSM at once: a one-node
// log without Raft, for tests of what a leader term does over time.
type applyEngine struct {
	mu    sync.Mutex
	f     *fsm.FSM
	index uint64
}

func (e *applyEngine) apply(data []byte, _ time.Duration) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.index++
	return e.f.Apply(e.index, data), nil
}

func (e *applyEngine) open() error                  { return nil }
func (e *applyEngine) state() (bool, uint64)        { return true, 1 }
func (e *applyEngine) leaderID() string             { return "n1" }
func (e *applyEngine) leaderAddr() (string, string) { return "n1", "" }
func (e *applyEngine) leaderCh() <-chan bool        { return nil }
func (e *applyEngine) barrier(time.Duration) error  { return nil }
func (e *applyEngine) lease(_ uint64, start time.Time) (time.Time, error) {
	return start.Add(time.Hour), nil
}
func (e *applyEngine) release(uint64)                              {}
func (e *applyEngine) transfer() error                             { return nil }
func (e *applyEngine) close() error                                { return nil }
func (e *applyEngine) memberHTTP(string) string                    { return "" }
func (e *applyEngine) describe(*api.Cluster) error                 { return nil }
func (e *applyEngine) addMember(context.Context, api.Member) error { return nil }
func (e *applyEngine) removeMember(context.Context, string) error  { return nil }

// timedNode is a node that leads on its own, whose leader terms run the
// timers of a real leader (session expiry, lock-delays, waits) on clock.
type timedNode struct {
	t     *testing.T
	n     *Node
	clock *SkewClock
	term  *leaderTerm
}

func newTimedNode(t *testing.T, clock *SkewClock) *timedNode {
	f := fsm.New()
	n := &Node{
		cfg: validConfig(), clock: clock, fsm: f, eng: &applyEngine{f: f},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), stop: make(chan struct{}),
	}
	tn := &timedNode{t: t, n: n, clock: clock}
	t.Cleanup(tn.endTerm)
	return tn
}

// startTerm makes the node a serving leader with a master lease that
// outlasts the test, and starts its expiry and timer loops.
func (tn *timedNode) startTerm() {
	term := newLeaderTerm(tn.n, 1)
	term.ready = true
	term.leaseUntil = tn.clock.Now().Add(time.Hour)
	tn.n.mu.Lock()
	tn.n.term = term
	tn.n.mu.Unlock()
	tn.term = term
	term.wg.Add(2)
	go term.expiryLoop()
	go term.tickLoop()
}

func (tn *timedNode) endTerm() {
	if tn.term == nil {
		return
	}
	tn.term.cancel()
	tn.term.wg.Wait()
	tn.n.mu.Lock()
	tn.n.term = nil
	tn.n.mu.Unlock()
	tn.term = nil
}

func (tn *timedNode) session(lockDelay time.Duration, ttl time.Duration) string {
	tn.t.Helper()
	d := api.Duration(lockDelay)
	s, err := tn.n.CreateSession(context.Background(), api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &d})
	if err != nil {
		tn.t.Fatalf("create session: %v", err)
	}
	return s.ID
}

func (tn *timedNode) tryAcquire(session, name string) error {
	_, err := tn.n.Acquire(context.Background(), name, api.AcquireRequest{Session: session})
	return err
}

func (tn *timedNode) mustPropose(c fsm.Command) fsm.Result {
	tn.t.Helper()
	res, err := tn.n.propose(context.Background(), c)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		tn.t.Fatalf("%v: %v", c.Op, err)
	}
	return res
}

// waitFor polls cond every 10ms for up to limit and returns how long it
// took; it reports an error (and returns limit) if cond never held. Safe
// to call from any goroutine.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Errorf("%s: not within %v", what, limit)
			return limit
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func queued(f *fsm.FSM, name, session string) bool {
	for _, w := range f.Lock(name).Waiters {
		if w.Session == session {
			return true
		}
	}
	return false
}

// A leader whose clock is a day off expires a session with a 2s lock-delay
// and queues a waiter for 3s; 1.5s later a leader with a true clock takes
// over. The new leader gives both their full length from its takeover:
// neither the day in the stamps nor the time already spent decides.
func TestLeaderTimers_FailoverRestartsDelaysAndWaitsInFull(t *testing.T) {
	for _, off := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			t.Parallel()
			clock := NewSkewClock()
			clock.Set(off, 1)
			tn := newTimedNode(t, clock)
			tn.startTerm()
			a, b, c := tn.session(2*time.Second, time.Hour), tn.session(0, time.Hour), tn.session(0, time.Hour)
			if err := tn.tryAcquire(a, "x"); err != nil {
				t.Fatal(err)
			}
			if err := tn.tryAcquire(b, "y"); err != nil {
				t.Fatal(err)
			}
			tn.mustPropose(fsm.Command{Op: fsm.OpAcquire, Session: c, Name: "y", Wait: 3 * time.Second})
			tn.mustPropose(fsm.Command{Op: fsm.OpExpireSession, Session: a})
			time.Sleep(1500 * time.Millisecond)

			tn.endTerm()
			clock.Set(0, 1)
			takeover := time.Now()
			tn.startTerm()
			time.Sleep(time.Second)
			if err := tn.tryAcquire(b, "x"); api.CodeOf(err) != api.CodeLockDelay {
				t.Fatalf("1s after the takeover (2.5s after the expiry): acquire = %v, want lock_delay for the full 2s from the takeover", err)
			}
			if !queued(tn.n.fsm, "y", c) {
				t.Fatal("1s after the takeover the 3s waiter is gone")
			}
			waitFor(t, 5*time.Second, "lock-delay end", func() bool { return tn.tryAcquire(b, "x") == nil })
			if el := time.Since(takeover); el < 2*time.Second-50*time.Millisecond || el > 3*time.Second {
				t.Fatalf("lock-delay ended %v after the takeover, want about 2s", el)
			}
			waitFor(t, 5*time.Second, "wait end", func() bool { return !queued(tn.n.fsm, "y", c) })
			if el := time.Since(takeover); el < 3*time.Second-50*time.Millisecond || el > 4*time.Second {
				t.Fatalf("the waiter left %v after the takeover, want about 3s", el)
			}
		})
	}
}

// A leader whose wall clock is stepped a day either way (an NTP step; its
// monotonic clock is untouched) stamps its entries a day off, and that
// changes no timer: a 2s lock-delay ends after about 2s, a 1s wait after
// about 1s, a session with a 1.5s TTL expires after about 1.5s.
func TestLeaderTimers_WallStepChangesNoTimer(t *testing.T) {
	for _, step := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			clock := NewSkewClock()
			clock.SetWallStep(step)
			tn := newTimedNode(t, clock)
			tn.startTerm()
			a, b, c := tn.session(2*time.Second, time.Hour), tn.session(0, time.Hour), tn.session(0, time.Hour)
			if err := tn.tryAcquire(a, "x"); err != nil {
				t.Fatal(err)
			}
			if err := tn.tryAcquire(b, "y"); err != nil {
				t.Fatal(err)
			}
			if stamp := tn.n.fsm.Lock("x").Holders[0].AcquiredAt; time.Until(stamp) < step-time.Minute || time.Until(stamp) > step+time.Minute {
				t.Fatalf("acquired_at %v is not stamped %v off", stamp, step)
			}
			short := tn.session(0, 1500*time.Millisecond)
			tn.mustPropose(fsm.Command{Op: fsm.OpAcquire, Session: c, Name: "y", Wait: time.Second})
			tn.mustPropose(fsm.Command{Op: fsm.OpExpireSession, Session: a})

			err := tn.tryAcquire(b, "x")
			var e *api.Error
			if !errors.As(err, &e) || e.Code != api.CodeLockDelay || e.RetryAfter < time.Second || e.RetryAfter > 2*time.Second {
				t.Fatalf("acquire inside the lock-delay = %v, want lock_delay with Retry-After up to 2s", err)
			}
			var delayEnd, waitEnd, expiry time.Duration
			var wg sync.WaitGroup
			wg.Add(3)
			go func() {
				defer wg.Done()
				delayEnd = waitFor(t, 5*time.Second, "lock-delay end", func() bool { return tn.tryAcquire(b, "x") == nil })
			}()
			go func() {
				defer wg.Done()
				waitEnd = waitFor(t, 5*time.Second, "wait end", func() bool { return !queued(tn.n.fsm, "y", c) })
			}()
			go func() {
				defer wg.Done()
				expiry = waitFor(t, 5*time.Second, "session expiry", func() bool { _, ok := tn.n.fsm.Session(short); return !ok })
			}()
			wg.Wait()
			for _, c := range []struct {
				what     string
				got, len time.Duration
			}{{"lock-delay", delayEnd, 2 * time.Second}, {"wait", waitEnd, time.Second}, {"session", expiry, 1500 * time.Millisecond}} {
				if c.got < c.len-100*time.Millisecond || c.got > c.len+time.Second {
					t.Errorf("%s of %v ended after %v", c.what, c.len, c.got)
				}
			}
		})
	}
}

// The leader's table starts a timer at its full length when it first sees
// it, keeps its end while the state names the same timer, moves it only
// later when the state restarts it, and forgets it once it is gone.
func TestTimerTable_StartsInFullAndNeverShortens(t *testing.T) {
	tt := &timerTable{ends: make(map[timerKey]timerEnd)}
	t0 := time.Unix(1000, 0)
	delay := fsm.Timer{TimerRef: fsm.TimerRef{Name: "x", Armed: 7}, Length: 10 * time.Second}
	wait := fsm.Timer{TimerRef: fsm.TimerRef{Election: true, Name: "e", Session: "s", Armed: 8}, Length: 4 * time.Second}
	tt.sync([]fsm.Timer{delay, wait}, t0)
	tt.sync([]fsm.Timer{delay, wait}, t0.Add(3*time.Second)) // same timers: ends stay
	if refs, next, ok := tt.due(t0.Add(3 * time.Second)); len(refs) != 0 || !ok || !next.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("due at +3s: %v, next %v %v", refs, next, ok)
	}
	// The delay is restarted with a shorter length: it keeps the later end.
	short := delay
	short.Armed, short.Length = 9, time.Second
	tt.sync([]fsm.Timer{short, wait}, t0.Add(3*time.Second))
	if d, ok := tt.remaining(short.TimerRef, t0.Add(3*time.Second)); !ok || d != 7*time.Second {
		t.Fatalf("restarted delay has %v left (%v), want the 7s it had", d, ok)
	}
	if _, ok := tt.remaining(delay.TimerRef, t0); ok {
		t.Fatal("the table still answers for the delay's earlier start")
	}
	// ...and with a longer one it runs for that length from now.
	long := short
	long.Armed, long.Length = 10, 20*time.Second
	tt.sync([]fsm.Timer{long, wait}, t0.Add(4*time.Second))
	refs, next, ok := tt.due(t0.Add(4 * time.Second))
	if len(refs) != 1 || refs[0] != wait.TimerRef || !ok || !next.Equal(t0.Add(24*time.Second)) {
		t.Fatalf("due at +4s: %v, next %v %v", refs, next, ok)
	}
	tt.sync([]fsm.Timer{long}, t0.Add(5*time.Second)) // the wait ended in the state
	if _, ok := tt.remaining(wait.TimerRef, t0.Add(5*time.Second)); ok {
		t.Fatal("an ended wait stays in the table")
	}
}

// A semaphore's delayed slots are timers of their own, apart from each
// other (two sessions expiring in one entry), from the lock-delay of the
// whole lock and from a waiter of the same session: each runs its own
// length and comes back due as the ref the state named, Slot and all.
func TestTimerTable_SlotDelaysKeptApart(t *testing.T) {
	tt := &timerTable{ends: make(map[timerKey]timerEnd)}
	t0 := time.Unix(1000, 0)
	slotA := fsm.Timer{TimerRef: fsm.TimerRef{Name: "s", Session: "a", Slot: true, Armed: 7}, Length: 2 * time.Second}
	slotB := fsm.Timer{TimerRef: fsm.TimerRef{Name: "s", Session: "b", Slot: true, Armed: 7}, Length: 5 * time.Second}
	slotA2 := fsm.Timer{TimerRef: fsm.TimerRef{Name: "s", Session: "a", Slot: true, Armed: 9}, Length: 3 * time.Second}
	waitA := fsm.Timer{TimerRef: fsm.TimerRef{Name: "s", Session: "a", Armed: 8}, Length: 4 * time.Second}
	all := []fsm.Timer{slotA, slotB, slotA2, waitA}
	tt.sync(all, t0)
	for _, tm := range all {
		if d, ok := tt.remaining(tm.TimerRef, t0); !ok || d != tm.Length {
			t.Fatalf("%+v: %v left (%v), want its full length", tm.TimerRef, d, ok)
		}
	}
	refs, next, _ := tt.due(t0.Add(3 * time.Second))
	if len(refs) != 2 || refs[0] != slotA.TimerRef || refs[1] != slotA2.TimerRef || !next.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("due at +3s: %+v, next %v", refs, next)
	}
}
