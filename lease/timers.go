package lease

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lockd/lockd/fsm"
)

// Lock-delays and waits are the FSM's timers (fsm.Timers): the state says
// which are pending and how long each lasts, and the leader measures them
// on its own monotonic clock, as it does session deadlines. Each starts
// when this leader first sees it, so a new leader gives every pending
// timer its full length again: a delay or a wait may last longer across a
// failover, never shorter. No wall-clock reading of any node is involved.

// timerKey names a timer in the table: a lock-delay has no session; a
// semaphore's delayed slot has the session that expired holding it and,
// in slot, the entry that started it.
type timerKey struct {
	election bool
	name     string
	session  string
	slot     uint64
}

// timerEnd is when a timer started by entry armed runs out.
type timerEnd struct {
	armed uint64
	end   time.Time // on the leader's clock (monotonic)
}

// timerTable holds the ends of a leader term's pending timers.
type timerTable struct {
	mu   sync.Mutex
	ends map[timerKey]timerEnd
}

func newTimerTable() *timerTable {
	return &timerTable{ends: make(map[timerKey]timerEnd)}
}

// timerTable returns t's table: the tick loop fills it, requests only look.
func (t *leaderTerm) timerTable() *timerTable { return t.timers }

func keyOf(r fsm.TimerRef) timerKey {
	k := timerKey{election: r.Election, name: r.Name, session: r.Session}
	if r.Slot {
		k.slot = r.Armed
	}
	return k
}

// sync brings the table in line with the pending timers at now: a timer
// seen for the first time runs for its full length from now; one restarted
// in the state (a later expiry of the same lock, a retried acquire) runs
// for its full length from now unless it already ran longer; timers no
// longer pending leave.
func (tt *timerTable) sync(pending []fsm.Timer, now time.Time) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	seen := make(map[timerKey]bool, len(pending))
	for _, p := range pending {
		k := keyOf(p.TimerRef)
		seen[k] = true
		old, ok := tt.ends[k]
		if ok && old.armed == p.Armed {
			continue
		}
		end := now.Add(p.Length)
		if ok && old.end.After(end) {
			end = old.end
		}
		tt.ends[k] = timerEnd{armed: p.Armed, end: end}
	}
	for k := range tt.ends {
		if !seen[k] {
			delete(tt.ends, k)
		}
	}
}

// due returns the timers that ran out by now, in a stable order, at most
// fsm.MaxTimersPerEntry of them, and the earliest end among the others.
func (tt *timerTable) due(now time.Time) (refs []fsm.TimerRef, next time.Time, more bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for k, e := range tt.ends {
		if !now.Before(e.end) {
			refs = append(refs, fsm.TimerRef{Election: k.election, Name: k.name, Session: k.session, Slot: k.slot != 0, Armed: e.armed})
			continue
		}
		if !more || e.end.Before(next) {
			next, more = e.end, true
		}
	}
	slices.SortFunc(refs, func(a, b fsm.TimerRef) int {
		return cmp.Or(compareBool(a.Election, b.Election), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Session, b.Session),
			compareBool(a.Slot, b.Slot), cmp.Compare(a.Armed, b.Armed))
	})
	if len(refs) > fsm.MaxTimersPerEntry {
		refs = refs[:fsm.MaxTimersPerEntry]
	}
	return refs, next, more
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// remaining returns how long the timer r names has left on this leader's
// clock, and false if the table does not know it (yet).
func (tt *timerTable) remaining(r fsm.TimerRef, now time.Time) (time.Duration, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	e, ok := tt.ends[keyOf(r)]
	if !ok || e.armed != r.Armed {
		return 0, false
	}
	return max(e.end.Sub(now), 0), true
}

// tickLoop runs the FSM's timers for this term: it starts a timer for every
// pending lock-delay and wait, and when timers run out it proposes one
// OpTimersDue naming them, so that every replica ends them at the same
// point of the log.
func (t *leaderTerm) tickLoop() {
	defer t.wg.Done()
	n := t.n
	// Poll as well as wait for the earliest end: the node's clock may be
	// skewed in rate, and a timer's end may pass while a proposal fails.
	poll := n.cfg.HeartbeatTimeout / 5
	const minGap = 10 * time.Millisecond // nothing may spin the loop
	for {
		changed := n.fsm.Changed()
		next, ok := t.runTimers()
		wait := poll
		if ok {
			wait = min(max(next.Sub(n.clock.Now()), minGap), poll)
		}
		timer := time.NewTimer(wait)
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// runTimers syncs the term's timer table with the state, proposes the end
// of the timers that ran out (only under the master lease; a failed
// proposal is retried on the next round), and returns the earliest end of
// the others.
func (t *leaderTerm) runTimers() (next time.Time, ok bool) {
	n := t.n
	tt := t.timerTable()
	tt.sync(n.fsm.Timers(), n.clock.Now())
	refs, next, ok := tt.due(n.clock.Now())
	if len(refs) == 0 {
		return next, ok
	}
	if !t.leaseValid() {
		return n.clock.Now(), true
	}
	if _, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpTimersDue, Timers: refs}); err != nil {
		if t.ctx.Err() == nil {
			n.log.Warn("end of lock-delays and waits not committed; will retry", "timers", len(refs), "err", err)
		}
		return n.clock.Now(), true
	}
	return next, ok
}

// delayRemaining returns how long the lock-delay of err has left by the
// serving leader's timer: its full length if the timer has not started yet
// (the leader has not seen the delay), at least a second if nothing is
// known.
func (n *Node) delayRemaining(err *fsm.DelayError) time.Duration {
	if t := n.currentTerm(); t != nil {
		if d, ok := t.timers.remaining(err.Ref, n.clock.Now()); ok {
			return d
		}
	}
	if err.Length > 0 {
		return err.Length
	}
	return time.Second
}

// ctxErr translates a finished context into the API's error.
func ctxErr(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return errTimeout("the request timed out")
	}
	return errNoLeader("the request was cancelled")
}
