package lease

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/lockd/lockd/fsm"
)

// expiryLoop proposes the expiry of every session whose leader-local
// deadline has passed. Deadlines live only on the leader: keepalives move
// them without writing the log, and a new leader starts every session on a
// full TTL. Up to maxExpiring expiries are in flight at once, so that Raft
// commits many in one round when many sessions end together (a fleet of
// clients dying at once).
func (t *leaderTerm) expiryLoop() {
	defer t.wg.Done()
	every := t.n.cfg.HeartbeatTimeout / 5
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	sem := make(chan struct{}, maxExpiring)
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-ticker.C:
		}
		var wg sync.WaitGroup
		for _, id := range t.expired() {
			// The lease check keeps a leader that lost its quorum from
			// expiring sessions whose keepalives now go elsewhere; Raft
			// would refuse the entry anyway, this only saves the attempt.
			if !t.leaseValid() || t.ctx.Err() != nil {
				break
			}
			select {
			case sem <- struct{}{}:
			case <-t.ctx.Done():
			}
			if t.ctx.Err() != nil {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t.expire(id)
			}()
		}
		wg.Wait()
	}
}

// maxExpiring bounds the session expiries the leader has in flight.
const maxExpiring = 64

// expire proposes the expiry of session id and forgets its deadline once
// the expiry is committed; a failed proposal is retried at the next tick.
func (t *leaderTerm) expire(id string) {
	n := t.n
	res, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpExpireSession, Session: id})
	switch {
	case err != nil && t.ctx.Err() != nil:
	case err != nil:
		n.log.Warn("session expiry not committed; will retry", "session", id, "err", err)
	default:
		t.forget(id)
		if res.Err == nil {
			n.log.Info("session expired", "session", id, "released", res.Released, "resigned", res.Resigned)
		}
	}
}

// expired returns the sessions past their deadline, in a stable order, and
// adopts sessions the table does not know yet (created through another
// path, or restored from a snapshot) with a full TTL. Each session it
// returns is marked as being expired (a zero deadline): from then on extend
// refuses it whatever the clock says, and the next sweep lists it again
// until forget drops it, so a failed expiry is retried.
func (t *leaderTerm) expired() []string {
	live := t.n.fsm.Sessions()
	t.mu.Lock()
	defer t.mu.Unlock()
	// Read under the lock, as extend does, so the two are ordered.
	now := t.n.clock.Now()
	seen := make(map[string]bool, len(live))
	var out []string
	for _, s := range live {
		seen[s.ID] = true
		d, ok := t.sessions[s.ID]
		if !ok {
			t.sessions[s.ID] = now.Add(s.TTL)
			continue
		}
		if !now.Before(d) {
			t.sessions[s.ID] = time.Time{}
			out = append(out, s.ID)
		}
	}
	for id := range t.sessions {
		if !seen[id] {
			delete(t.sessions, id)
		}
	}
	sort.Strings(out)
	return out
}

// extend moves a session's deadline to now + ttl, never earlier. It refuses
// (false) a session whose deadline has passed or that a sweep handed to
// expire: its expiry may be in flight, and reviving it would let the client
// believe in a session the leader is about to end. The clock is read under
// the lock, so a sweep that listed the session came before this reading.
func (t *leaderTerm) extend(id string, ttl time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.n.clock.Now()
	old, ok := t.sessions[id]
	if ok && (old.IsZero() || !now.Before(old)) {
		return false
	}
	if d := now.Add(ttl); d.After(old) {
		t.sessions[id] = d
	}
	return true
}

func (t *leaderTerm) forget(id string) {
	t.mu.Lock()
	delete(t.sessions, id)
	t.mu.Unlock()
}

// tickLoop proposes a Tick when the earliest lock-delay or waiter deadline
// in the state has passed: changes that time alone causes are still
// commands, so every replica makes them at the same point of the log.
func (t *leaderTerm) tickLoop() {
	defer t.wg.Done()
	n := t.n
	const minGap = 10 * time.Millisecond // a skewed clock must not spin the loop
	for {
		changed := n.fsm.Changed()
		next, ok := n.fsm.NextDeadline()
		wait := time.Hour
		if ok {
			wait = max(next.Sub(n.clock.Now()), 0)
		}
		timer := time.NewTimer(wait)
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return
		case <-changed:
			timer.Stop()
			continue
		case <-timer.C:
		}
		if !t.leaseValid() {
			t.sleep(minGap)
			continue
		}
		if _, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpTick}); err != nil {
			if t.ctx.Err() != nil {
				return
			}
			n.log.Warn("tick not committed; will retry", "err", err)
		}
		t.sleep(minGap)
	}
}

func (t *leaderTerm) sleep(d time.Duration) {
	select {
	case <-t.ctx.Done():
	case <-time.After(d):
	}
}

// ctxErr translates a finished context into the API's error.
func ctxErr(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return errTimeout("the request timed out")
	}
	return errNoLeader("the request was cancelled")
}
