package lease

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lockd/lockd/fsm"
)

// Session deadlines live only on the leader: keepalives move them without
// writing the log, and a new leader starts every session on a full TTL.
// The leader term keeps them in a table ordered by deadline (deadlines),
// so that a keepalive and a sweep each cost the sessions they touch, not
// the sessions there are.

const (
	// sweepChunk bounds the sessions a sweep hands to expire, and those a
	// reconciliation adopts or looks at, under one hold of the term's
	// mutex, so that keepalives never wait for more than that.
	sweepChunk = 256
	// maxExpiring bounds the expire-sessions entries the leader has in
	// flight at once.
	maxExpiring = 4
	// reconcileEvery is the least time between two reconciliations of the
	// deadline table with the state (see reconcile).
	reconcileEvery = time.Second
)

// expiryLoop proposes the expiry of every session whose leader-local
// deadline has passed. Sessions that fall due together expire together:
// one expire-sessions entry for up to fsm.MaxSessionsPerEntry of them,
// several entries in flight when more are due (a fleet of clients dying at
// once).
func (t *leaderTerm) expiryLoop() {
	defer t.wg.Done()
	ticker := time.NewTicker(t.n.cfg.HeartbeatTimeout / 5)
	defer ticker.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-ticker.C:
		}
		due := t.expired()
		// The lease check keeps a leader that lost its quorum from
		// expiring sessions whose keepalives now go elsewhere; Raft would
		// refuse the entry anyway, this only saves the attempt.
		if len(due) == 0 || !t.leaseValid() {
			continue
		}
		sem := make(chan struct{}, maxExpiring)
		var wg sync.WaitGroup
		for batch := range slices.Chunk(due, fsm.MaxSessionsPerEntry) {
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
				t.expire(batch)
			}()
		}
		wg.Wait()
	}
}

// expire proposes the expiry of the sessions in ids in one entry, forgets
// their deadlines once it is committed and logs it; after a failed
// proposal they stay handed to expire, and the next sweep lists them
// again.
func (t *leaderTerm) expire(ids []string) {
	n := t.n
	res, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpExpireSessions, Sessions: ids})
	switch {
	case err != nil && t.ctx.Err() != nil:
		return
	case err != nil:
		n.log.Warn("session expiries not committed; will retry", "sessions", len(ids), "first", ids[0], "err", err)
		return
	}
	t.forget(ids...)
	switch {
	case res.Err != nil:
		n.log.Error("session expiries refused", "sessions", len(ids), "err", res.Err)
	case len(res.Expired) > 0:
		n.count.sessionsExpired.Add(uint64(len(res.Expired)))
		n.log.Info("sessions expired", "count", len(res.Expired), "sessions", someExpired(res.Expired), "index", res.Index)
	}
	if !n.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	for _, e := range res.Expired {
		n.log.Debug("session expired", "session", e.Session, "released", e.Released, "resigned", e.Resigned, "index", res.Index)
	}
}

// someExpired names the first few sessions of an expiry, for its log line.
func someExpired(es []fsm.Expiry) []string {
	const few = 5
	out := make([]string, 0, min(len(es), few))
	for _, e := range es[:min(len(es), few)] {
		out = append(out, e.Session)
	}
	return out
}

// expired hands to expire the sessions whose deadline has passed and
// returns them, sorted, with those handed to expire earlier whose expiry
// is not committed yet (to retry it). From then on extend refuses them,
// whatever the clock says. Sessions gone from the state meanwhile leave
// the table instead. Then it reconciles the table with the state (see
// reconcile).
func (t *leaderTerm) expired() []string {
	defer t.reconcile()
	t.mu.Lock()
	out := t.deadlines.handedIDs(nil)
	t.mu.Unlock()
	for {
		t.mu.Lock()
		// Read under the lock, as extend does, so the two are ordered.
		now := t.n.clock.Now()
		before := len(out)
		out = t.deadlines.popDue(now, sweepChunk, out)
		t.mu.Unlock()
		if len(out)-before < sweepChunk {
			break
		}
	}
	live, gone := t.partition(out)
	t.forget(gone...)
	slices.Sort(live)
	return live
}

// partition splits ids into the sessions the state has and those it has
// not (any more).
func (t *leaderTerm) partition(ids []string) (live, gone []string) {
	for _, id := range ids {
		if _, ok := t.n.fsm.Session(id); ok {
			live = append(live, id)
		} else {
			gone = append(gone, id)
		}
	}
	return live, gone
}

// reconcile brings the deadline table in line with the state when they
// count different sessions, at most every reconcileEvery: it adopts the
// sessions the table does not know with a full TTL (one whose create was
// committed although its proposal failed), and drops those the state no
// longer has (one whose destroy was committed although its proposal
// failed). Every other change goes through the table as it happens.
func (t *leaderTerm) reconcile() {
	n := t.n
	now := n.clock.Now()
	t.mu.Lock()
	skip := t.deadlines.len() == n.fsm.SessionCount() || now.Before(t.reconciled.Add(reconcileEvery))
	if !skip {
		t.reconciled = now
	}
	t.mu.Unlock()
	if skip {
		return
	}
	for chunk := range slices.Chunk(n.fsm.AllSessions(), sweepChunk) {
		t.adopt(chunk)
	}
	var ids []string
	for from := 0; from >= 0; {
		t.mu.Lock()
		ids, from = t.deadlines.ids(from, sweepChunk, ids)
		t.mu.Unlock()
	}
	_, gone := t.partition(ids)
	t.forget(gone...)
}

// adopt gives each session of the state that the table does not know a
// full TTL from now. The state is asked again under the lock, so that a
// session whose end was committed and forgotten since the caller listed
// it is not adopted again.
func (t *leaderTerm) adopt(sessions []fsm.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.n.clock.Now()
	for _, s := range sessions {
		if t.deadlines.has(s.ID) {
			continue
		}
		if _, ok := t.n.fsm.Session(s.ID); ok {
			t.deadlines.track(s.ID, now.Add(s.TTL))
		}
	}
}

// track starts the deadline of a session just created: now + ttl.
func (t *leaderTerm) track(id string, ttl time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadlines.track(id, t.n.clock.Now().Add(t.n.unsafeSessionTTL(ttl)))
}

// extend moves a session's deadline to now + ttl, never earlier. It refuses
// (false) a session whose deadline has passed or that a sweep handed to
// expire: its expiry may be in flight, and reviving it would let the client
// believe in a session the leader is about to end. It also refuses a
// session the table does not know: one whose end was committed and
// forgotten since the caller found it in the state. The clock is read
// under the lock, so a sweep that listed the session came before this
// reading.
func (t *leaderTerm) extend(id string, ttl time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.n.clock.Now()
	return t.deadlines.extend(id, now, now.Add(t.n.unsafeSessionTTL(ttl)))
}

// forget drops the deadlines of sessions that ended, in chunks of
// sweepChunk under one hold of the lock.
func (t *leaderTerm) forget(ids ...string) {
	for chunk := range slices.Chunk(ids, sweepChunk) {
		t.mu.Lock()
		for _, id := range chunk {
			t.deadlines.forget(id)
		}
		t.mu.Unlock()
	}
}

// sessionDeadline returns the deadline of a session in the table, on the
// node's monotonic clock; a session handed to expire keeps the deadline
// that passed.
func (t *leaderTerm) sessionDeadline(id string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.deadlines.byID[id]
	if !ok {
		return time.Time{}, false
	}
	return e.end, true
}
