package lease

import (
	"context"
	"sync"
	"time"

	"github.com/lockd/lockd/fsm"
)

// leaderTerm is what a node keeps while it acts as Raft leader: the master
// lease, the session deadlines, and the goroutines that renew the lease,
// expire sessions and end lock-delays. It lives from the moment Raft makes
// the node leader until Raft takes that away (or the node closes).
type leaderTerm struct {
	n        *Node
	raftTerm uint64
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	confirmCh chan struct{} // asks the lease loop for a round now

	mu         sync.Mutex
	ready      bool
	leaseUntil time.Time // master lease end, on the node's monotonic clock
	roundUntil time.Time // the end the last rounds computed (leaseUntil but for unsafeLeaseEnd)
	logged     bool      // the lease log's last line for this term lets the node serve
	unlogged   bool      // the log says the node stopped serving in this term, for good
	given      bool      // lease given up for a leadership transfer
	waiting    []chan error
	deadlines  deadlines   // the sessions' leader-local deadlines
	reconciled time.Time   // when the deadlines were last reconciled with the state
	timers     *timerTable // ends of pending lock-delays and waits
	unsafe     unsafeTerm  // the unsafe switches' state (none without the lockd_unsafe tag)
}

func newLeaderTerm(n *Node, raftTerm uint64) *leaderTerm {
	ctx, cancel := context.WithCancel(context.Background())
	return &leaderTerm{
		n: n, raftTerm: raftTerm, ctx: ctx, cancel: cancel,
		confirmCh: make(chan struct{}, 1),
		deadlines: newDeadlines(),
		timers:    newTimerTable(),
	}
}

func (t *leaderTerm) start() {
	t.wg.Add(1)
	go t.establish()
}

func (t *leaderTerm) stop() {
	t.cancel()
	t.wg.Wait()
	t.mu.Lock()
	t.logStopLocked()
	t.ready = false
	t.leaseUntil = time.Time{}
	for _, w := range t.waiting {
		w <- errNoLeader("leadership lost")
	}
	t.waiting = nil
	t.mu.Unlock()
}

func (t *leaderTerm) ended() bool { return t.ctx.Err() != nil }

func (t *leaderTerm) isReady() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready && t.ctx.Err() == nil
}

// establish runs the steps a new leader takes before it serves: a Barrier
// so that every entry of earlier terms is applied, a first quorum
// confirmation for the lease, and a full TTL for every session (a session
// may live longer across a failover, never shorter).
func (t *leaderTerm) establish() {
	defer t.wg.Done()
	n := t.n
	if err := n.eng.barrier(n.cfg.ApplyTimeout); err != nil {
		n.log.Warn("barrier failed; not serving this term", "term", t.raftTerm, "err", err)
		t.cancel()
		return
	}
	t.wg.Add(1)
	go t.leaseLoop()
	if err := t.confirm(t.ctx); err != nil {
		n.log.Warn("could not establish master lease", "term", t.raftTerm, "err", err)
		t.cancel()
		return
	}
	// The table is built before the term serves, so nothing else can
	// change it meanwhile; only the swap takes the lock.
	now := n.clock.Now()
	table := fill(n.fsm.AllSessions(), func(s fsm.Session) time.Time {
		if n.unsafeNoSessionGrace() {
			return now // expire at the next sweep
		}
		return now.Add(s.TTL)
	})
	inherited := table.len()
	t.mu.Lock()
	t.deadlines = table
	t.ready = true
	t.mu.Unlock()
	n.log.Info("master lease gained; serving as leader", "term", t.raftTerm, "sessions", inherited,
		"lease", n.cfg.leaseDuration())
	t.wg.Add(3)
	go t.expiryLoop()
	go t.tickLoop()
	go t.tokenReaper()
	if n.raft != nil && n.cfg.Voters > 0 {
		t.wg.Add(1)
		go n.raft.autopilot(t)
	}
	t.registerSelf()
	t.bootstrapACL()
}

// registerSelf writes this node's addresses to the member table, so that
// followers know where to forward requests.
func (t *leaderTerm) registerSelf() {
	n := t.n
	want := fsm.Member{ID: n.cfg.ID, Peer: n.cfg.PeerAddr, HTTP: n.cfg.HTTPAddr, Etcd: n.cfg.EtcdAddr}
	for _, m := range n.fsm.Members() {
		if m == want {
			return
		}
	}
	if _, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpSetMember, Member: &want}); err != nil {
		n.log.Warn("could not register in member table", "err", err)
	}
}

// leaseLoop renews the master lease every renewInterval, and at once when a
// consistent read asks for a round. A round takes the time, then asks the
// engine to confirm the quorum (in Raft mode: the lease exchange, whose
// questions all leave after that time), and the lease runs from the time
// taken. A failed round leaves the lease to run out; the term ends when
// Raft says this node no longer leads.
//
// No round can count an answer to a question sent before it began, so a
// pause of this process (SIGSTOP, a long GC, a stalled VM) cannot stretch
// the lease: whatever a round learns, it learns after its start.
func (t *leaderTerm) leaseLoop() {
	defer t.wg.Done()
	n := t.n
	every := n.cfg.renewInterval()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failing := false
	var lapsed time.Time // when the lease was found run out, until a round succeeds
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-timer.C:
		case <-t.confirmCh:
		}
		start := n.clock.Now()
		t.mu.Lock()
		waiting, given := t.waiting, t.given
		t.waiting = nil
		t.mu.Unlock()
		if given {
			// The lease is given up for the rest of the term: nothing
			// to renew. The followers are told instead, so that their
			// promises end and they may vote in a transfer at once.
			n.eng.release(t.raftTerm)
			t.finishRound(time.Time{}, nil, waiting)
			timer.Reset(every)
			continue
		}
		// The lease may have run out while Raft still says this node
		// leads (rounds failed, or the clock jumped): it serves nothing
		// until a round succeeds.
		noteLapse := func(now time.Time) {
			if lapsed.IsZero() && t.lapsedAt(now) {
				lapsed = now
				n.count.leaseLapses.Add(1)
				n.log.Warn("master lease lost: it ran out before a renewal confirmed a quorum; not serving", "term", t.raftTerm)
			}
		}
		noteLapse(start)
		until, err := n.eng.lease(t.raftTerm, start)
		t.finishRound(until, err, waiting)
		switch {
		case err != nil && !failing:
			n.log.Warn("master lease not renewed", "term", t.raftTerm, "err", err)
		case err == nil && !lapsed.IsZero():
			n.log.Info("master lease regained; serving again", "term", t.raftTerm,
				"suspended_for", n.clock.Now().Sub(lapsed).Round(time.Millisecond))
		case err == nil && failing:
			n.log.Info("master lease renewed again", "term", t.raftTerm)
		}
		failing = err != nil
		if failing {
			n.leaseFailures.Add(1)
			noteLapse(n.clock.Now())
		} else {
			lapsed = time.Time{}
		}
		timer.Reset(every)
	}
}

func (t *leaderTerm) finishRound(until time.Time, err error, waiting []chan error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil:
		err = errNoLeader("could not confirm a quorum: " + err.Error())
	case t.given:
		err = errNoLeader("leadership is being transferred")
	case until.After(t.roundUntil):
		t.roundUntil = until
		t.leaseUntil = t.n.unsafeLeaseEnd(until)
		t.logLeaseLocked()
	}
	for _, w := range waiting {
		w <- err
	}
}

// confirm waits for a quorum confirmation round that starts after the call.
func (t *leaderTerm) confirm(ctx context.Context) error {
	ch := make(chan error, 1)
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		return errNoLeader("leadership lost")
	}
	t.waiting = append(t.waiting, ch)
	t.mu.Unlock()
	select {
	case t.confirmCh <- struct{}{}:
	default:
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctxErr(ctx)
	case <-t.ctx.Done():
		return errNoLeader("leadership lost")
	}
}

// leaseValid reports whether the master lease holds now. It also asks the
// engine whether this node still leads in this term: a leader that has
// stepped down may vote for another candidate at once, and the lease
// counted on its own vote. Callers read the state they answer with first
// and check the lease after, so the answer is true as of a moment the
// lease held.
func (t *leaderTerm) leaseValid() bool {
	if leader, term := t.n.eng.state(); !leader || term != t.raftTerm {
		if valid, on := t.unsafeDeposedValid(); on {
			return valid
		}
		t.logStop()
		return false
	}
	now := t.n.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready && !t.given && t.ctx.Err() == nil && (now.Before(t.leaseUntil) || t.n.unsafeStaleReads())
}

// logLeaseLocked appends the lease's current end to the lease log, as a
// real time. t.mu is held.
func (t *leaderTerm) logLeaseLocked() {
	if t.n.leaseLog == nil || t.leaseUntil.IsZero() || t.unlogged {
		return
	}
	t.n.leaseLog.record(t.raftTerm, time.Now(), realTime(t.n.clock, t.leaseUntil))
	t.logged = true
}

// logStop records that the node no longer serves under its lease of this
// term, if the log says it may. Every caller knows that the node will not
// serve again in this term (Raft made it a follower, the term ended, the
// lease was given up), so no later line revives it: a round that was under
// way when Raft stepped the node down can still end in an extension,
// which leaseValid refuses to use.
func (t *leaderTerm) logStop() {
	t.mu.Lock()
	t.logStopLocked()
	t.mu.Unlock()
}

func (t *leaderTerm) logStopLocked() {
	t.unlogged = true
	if !t.logged {
		return
	}
	now := time.Now()
	t.n.leaseLog.record(t.raftTerm, now, now)
	t.logged = false
}

// clockChanged writes the lease's end again after the node's clock changed
// rate or offset: the same end on the node's clock is another real time.
func (t *leaderTerm) clockChanged() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.logged {
		t.logLeaseLocked()
	}
}

// lapsedAt reports whether the lease of this serving term has run out by
// now (and was not given up).
func (t *leaderTerm) lapsedAt(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready && !t.given && t.ctx.Err() == nil && !now.Before(t.leaseUntil)
}

// leaseRemaining returns the time left on the master lease (0 if none).
func (t *leaderTerm) leaseRemaining() time.Duration {
	now := t.n.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.given || !t.ready || t.ctx.Err() != nil || !now.Before(t.leaseUntil) {
		return 0
	}
	return t.leaseUntil.Sub(now)
}

// isGiven reports whether the lease was given up for the term.
func (t *leaderTerm) isGiven() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.given
}

// giveUpLease drops the lease for good in this term, before a leadership
// transfer lets followers vote early.
func (t *leaderTerm) giveUpLease() {
	t.mu.Lock()
	t.giveUpLeaseLocked()
	t.mu.Unlock()
}

func (t *leaderTerm) giveUpLeaseLocked() {
	t.given = true
	t.leaseUntil = time.Time{}
	t.logStopLocked()
}

// MasterLease returns the time left on this node's master lease: 0 unless
// it leads, has established its term and holds the lease now.
func (n *Node) MasterLease() time.Duration {
	n.mu.Lock()
	t := n.term
	n.mu.Unlock()
	if t == nil {
		return 0
	}
	return t.leaseRemaining()
}
