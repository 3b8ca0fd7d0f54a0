package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// namespace is what differs between locks and elections for the code that
// queues and waits: how to read the object and which command leaves the queue.
type namespace struct {
	kind     string // "lock" or "election", for messages
	election bool
	get      func(*fsm.FSM, string) fsm.Lock
	cancel   fsm.Op
}

var (
	locksNS     = namespace{"lock", false, (*fsm.FSM).Lock, fsm.OpCancelWait}
	electionsNS = namespace{"election", true, (*fsm.FSM).Election, fsm.OpCancelCampaign}
)

func (ns namespace) what(name string) string { return fmt.Sprintf("%s %q", ns.kind, name) }

// Acquire commits an acquire; if it was queued it waits for the hand-off
// until req.Wait runs out, and then leaves the queue. If ctx ends first it
// returns at once and the session stays queued until its wait runs out.
func (n *Node) Acquire(ctx context.Context, name string, req api.AcquireRequest) (api.AcquireResponse, error) {
	mode := fsm.Mode(req.Mode)
	if mode == "" {
		mode = fsm.Exclusive
	}
	cmd := fsm.Command{Op: fsm.OpAcquire, Session: req.Session, Name: name, Mode: mode, Wait: req.Wait.D(), Seq: req.Seq, Limit: req.Limit}
	token, err := n.acquire(ctx, locksNS, cmd)
	if err != nil {
		return api.AcquireResponse{}, err
	}
	return api.AcquireResponse{Name: name, Mode: string(mode), Token: token, Session: req.Session, Limit: req.Limit}, nil
}

// Campaign is Acquire for an election: it returns once the session leads.
func (n *Node) Campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Election, error) {
	cmd := fsm.Command{Op: fsm.OpCampaign, Session: req.Session, Name: name, Mode: fsm.Exclusive, Value: req.Value, Wait: req.Wait.D(), Seq: req.Seq}
	if _, err := n.acquire(ctx, electionsNS, cmd); err != nil {
		return api.Election{}, err
	}
	return wireElection(n.fsm.Election(name)), nil
}

func (n *Node) acquire(ctx context.Context, ns namespace, cmd fsm.Command) (uint64, error) {
	start := time.Now()
	token, err := n.acquireOnce(ctx, ns, cmd)
	if err == nil && !ns.election && n.count.wait != nil {
		n.count.wait.Observe(sinceSeconds(start))
	}
	return token, err
}

func (n *Node) acquireOnce(ctx context.Context, ns namespace, cmd fsm.Command) (uint64, error) {
	if err := api.ValidateName(cmd.Name); err != nil {
		return 0, api.Errorf(api.CodeBadRequest, "%v", err)
	}
	t, err := n.leading()
	if err != nil {
		return 0, err
	}
	if refused, err := n.refusedAtOnce(ctx, cmd, ns.what(cmd.Name)); refused {
		return 0, err
	}
	if err := n.checkAcquireLimits(cmd.Op == fsm.OpCampaign, cmd); err != nil {
		return 0, err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return 0, err
	}
	if res.Err != nil {
		return 0, n.apiErr(res.Err, cmd.Session, ns.what(cmd.Name))
	}
	if res.Granted {
		return res.Token, nil
	}
	return n.waitGrant(ctx, t, ns, cmd)
}

// refusedAtOnce answers cmd without a log entry when the state machine
// would refuse it and change nothing but its applied index
// (fsm.FSM.Refusal): a try-acquire or try-campaign of an object others
// hold or queue for, or inside a lock-delay, that carries no request
// number or one already applied; or any request naming a session that
// does not exist (a session never comes back). Such an answer is a read of
// the state, and is served exactly as a default read is (read): on the
// leader under its master lease, from everything it has applied, which
// holds every entry whose answer was sent (an answer is sent after the
// entry applies here) and, since the leader serves only after establish's
// barrier, every entry of earlier terms; the lease is checked after the
// state was read. The read is the request's linearization point.
//
// A try-acquire refused with a request number not applied before still
// costs an entry: the state machine records the number, so that a late
// copy of the same request (an attempt that hung on a paused node while
// its retry was refused) is not applied when the lock is free later, to a
// client that was told it did not get it. Only the log can record that
// number before the answer leaves. refused false: cmd must be committed.
func (n *Node) refusedAtOnce(ctx context.Context, cmd fsm.Command, what string) (refused bool, err error) {
	cmd.Now = wallNow(n.clock).UTC()
	var refusal error
	if _, err := read(ctx, n, api.ReadOptions{}, fsm.AppliedTopic(), n.fsm.AppliedIndex, func() struct{} {
		refusal = n.fsm.Refusal(cmd)
		return struct{}{}
	}); err != nil {
		return true, err
	}
	if refusal == nil {
		return false, nil
	}
	return true, n.apiErr(refusal, cmd.Session, what)
}

// waitGrant waits for a queued session to be granted the lock. When the
// wait runs out it commits a cancel, whose result decides: the lock may have
// been handed over just before, and then the caller gets it rather than a
// lock that stays held until its session ends.
//
// When the caller goes away first (a client that hangs up, or a follower
// that dies while forwarding the request) the session keeps its place: the
// client library repeats an unanswered request with the same number, and
// the repeat must find the place it had, or a session that queued later
// would be granted first and the queue would not be first-in first-out. The
// place ends with the wait's own timer, which the leader runs whether or
// not anyone is listening (see fsm's package doc). The price: a caller that
// hung up for good may be granted the lock, which its session then holds
// until it releases it, is destroyed, or expires; the client library gives
// back a grant it learns of after giving up, and the CLI destroys its
// session on exit.
func (n *Node) waitGrant(ctx context.Context, t *leaderTerm, ns namespace, cmd fsm.Command) (uint64, error) {
	wctx, cancel := n.waitCtx(ctx)
	defer cancel()
	timer := time.NewTimer(cmd.Wait)
	defer timer.Stop()
	// Only a change of this session's own standing on the lock wakes the
	// loop: a hand-off to another waiter, or another joining the queue,
	// does not, so a hand-off costs the same however long the queue.
	topic := fsm.StandingTopic(ns.election, cmd.Name, cmd.Session)
	for {
		tok, done, err := func() (uint64, bool, error) {
			changed, stop := n.fsm.Watch(topic)
			defer stop()
			tok, held, queued := n.fsm.Standing(ns.election, cmd.Name, cmd.Session)
			// Under an unsafe switch a waiter dropped unseen is not
			// told: it waits out its wait, as if still queued.
			dropped := !queued && n.unsafeSkipWaiter()
			switch {
			case held:
				return tok, true, nil
			case !queued && !dropped:
				return 0, true, n.notGranted(ns, cmd)
			}
			select {
			case <-changed:
				return 0, false, nil
			case <-t.ctx.Done():
				// The queued place is committed and the next leader keeps
				// it, so the lock may yet be granted: the outcome is
				// unknown. A client that re-issues the acquire there (same
				// seq) finds its place or its grant.
				return 0, true, errTimeout("leadership lost while waiting in the queue; the waiter stays queued and may still be granted, so the outcome is unknown")
			case <-wctx.Done():
				return 0, true, errTimeout("the caller went away while waiting in the queue; the waiter stays queued until its wait runs out and may still be granted, so the outcome is unknown")
			case <-timer.C:
			}
			if dropped {
				return 0, true, n.notGranted(ns, cmd)
			}
			tok, err := n.leaveQueue(ns, cmd)
			return tok, true, err
		}()
		if done {
			return tok, err
		}
	}
}

func (n *Node) leaveQueue(ns namespace, cmd fsm.Command) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	res, err := n.propose(ctx, fsm.Command{Op: ns.cancel, Session: cmd.Session, Name: cmd.Name})
	if err != nil {
		return 0, err
	}
	if res.Err != nil {
		return 0, n.apiErr(res.Err, cmd.Session, ns.what(cmd.Name))
	}
	if res.Granted {
		return res.Token, nil
	}
	return 0, n.notGranted(ns, cmd)
}

// notGranted explains why a queued session left the queue without the lock.
func (n *Node) notGranted(ns namespace, cmd fsm.Command) error {
	if _, ok := n.fsm.Session(cmd.Session); !ok {
		return n.apiErr(fsm.ErrSessionNotFound, cmd.Session, "")
	}
	l := ns.get(n.fsm, cmd.Name)
	if delay := l.PendingDelay(ns.election); delay != nil {
		return n.apiErr(delay, cmd.Session, ns.what(cmd.Name))
	}
	e := api.Errorf(api.CodeLockHeld, "%s is still held after waiting %v", ns.what(cmd.Name), cmd.Wait)
	return e
}

// Release commits the release of a lock by its holder, or takes a queued
// session out of the lock's queue.
func (n *Node) Release(ctx context.Context, name string, req api.SessionRequest) error {
	return n.simple(ctx, locksNS, fsm.Command{Op: fsm.OpLetGo, Session: req.Session, Name: name, Seq: req.Seq})
}

// Proclaim sets the leader's value of an election.
func (n *Node) Proclaim(ctx context.Context, name string, req api.ProclaimRequest) error {
	return n.simple(ctx, electionsNS, fsm.Command{Op: fsm.OpProclaim, Session: req.Session, Name: name, Value: req.Value, Seq: req.Seq})
}

// Resign gives up leadership of an election (or leaves its queue).
func (n *Node) Resign(ctx context.Context, name string, req api.SessionRequest) error {
	return n.simple(ctx, electionsNS, fsm.Command{Op: fsm.OpResign, Session: req.Session, Name: name, Seq: req.Seq})
}

func (n *Node) simple(ctx context.Context, ns namespace, cmd fsm.Command) error {
	if err := api.ValidateName(cmd.Name); err != nil {
		return api.Errorf(api.CodeBadRequest, "%v", err)
	}
	if _, err := n.leading(); err != nil {
		return err
	}
	if refused, err := n.refusedAtOnce(ctx, cmd, ns.what(cmd.Name)); refused {
		return err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return err
	}
	return n.apiErr(res.Err, cmd.Session, ns.what(cmd.Name))
}

// Lock reads one lock; a lock that does not exist reads as free.
func (n *Node) Lock(ctx context.Context, name string, opt api.ReadOptions) (api.Lock, error) {
	l, err := read(ctx, n, opt, fsm.ObjectTopic(false, name),
		func() uint64 { return n.fsm.Lock(name).ModifyIndex },
		func() api.Lock { return wireLock(n.fsm.Lock(name)) })
	if err == nil && opt.Stale {
		l = n.unsafeStaleLock(name, l)
	}
	return l, err
}

// Locks reads one page of the existing locks.
func (n *Node) Locks(ctx context.Context, opt api.ListOptions) (api.LockList, error) {
	p, err := readPage(ctx, n, opt, fsm.SpaceTopic(false), n.fsm.LocksIndex, n.fsm.LocksAfter, wireLock, lockName)
	return api.LockList{Locks: p.items, Index: p.index, Next: p.next}, err
}

// Elections reads one page of the existing elections.
func (n *Node) Elections(ctx context.Context, opt api.ListOptions) (api.ElectionList, error) {
	p, err := readPage(ctx, n, opt, fsm.SpaceTopic(true), n.fsm.ElectionsIndex, n.fsm.ElectionsAfter, wireElection, lockName)
	return api.ElectionList{Elections: p.items, Index: p.index, Next: p.next}, err
}

func lockName(l fsm.Lock) string { return l.Name }

// Check tells whether token belongs to a current holder of the lock
// (Chubby's CheckSequencer), as a default read.
func (n *Node) Check(ctx context.Context, name string, token uint64) (bool, error) {
	return read(ctx, n, api.ReadOptions{}, fsm.AppliedTopic(), n.fsm.AppliedIndex, func() bool {
		return n.fsm.Check(name, token)
	})
}

// Election reads the leader of an election; Session is empty when nobody leads.
func (n *Node) Election(ctx context.Context, name string, opt api.ReadOptions) (api.Election, error) {
	e, err := read(ctx, n, opt, fsm.ObjectTopic(true, name),
		func() uint64 { return n.fsm.Election(name).ModifyIndex },
		func() api.Election { return wireElection(n.fsm.Election(name)) })
	if err == nil && opt.Wait > 0 {
		e = n.unsafeObserved(name, e)
	}
	return e, err
}

func wireLock(l fsm.Lock) api.Lock {
	out := api.Lock{Name: l.Name, Mode: string(l.Mode), Limit: l.Limit, Holders: []api.Holder{}, Waiters: []api.Waiter{}, ModifyIndex: l.ModifyIndex}
	for _, h := range l.Holders {
		out.Holders = append(out.Holders, api.Holder{Session: h.Session, Token: h.Token, AcquiredAt: h.AcquiredAt})
	}
	for _, w := range l.Waiters {
		out.Waiters = append(out.Waiters, api.Waiter{Session: w.Session, Mode: string(w.Mode), Deadline: w.Deadline})
	}
	if !l.DelayUntil.IsZero() {
		d := l.DelayUntil
		out.DelayUntil = &d
	}
	for _, d := range l.Slots {
		out.DelayedSlots = append(out.DelayedSlots, api.DelayedSlot{Session: d.Session, Until: d.Until})
	}
	return out
}

func wireElection(l fsm.Lock) api.Election {
	e := api.Election{Name: l.Name, ModifyIndex: l.ModifyIndex}
	if len(l.Holders) > 0 {
		e.Session, e.Token, e.Value = l.Holders[0].Session, l.Holders[0].Token, l.Value
		at := l.Holders[0].AcquiredAt
		e.AcquiredAt = &at
	}
	for _, w := range l.Waiters {
		e.Waiters = append(e.Waiters, api.Waiter{Session: w.Session, Mode: string(w.Mode), Deadline: w.Deadline})
	}
	if !l.DelayUntil.IsZero() {
		d := l.DelayUntil
		e.DelayUntil = &d
	}
	return e
}
