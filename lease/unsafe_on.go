//go:build lockd_unsafe

package lease

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// This file exists only in a build with the lockd_unsafe tag (the fault
// harness's): it holds the node's unsafe switches (Config.Unsafe) and
// everything they do. The safety-critical code calls each through one
// hook named unsafe...; a default build has unsafe_off.go instead, whose
// hooks are constants the compiler folds away, so that no binary built
// for production can be started with a guarantee off.

// unsafeConfig is embedded in Config, which so gets the field Unsafe.
type unsafeConfig struct {
	// Unsafe breaks guarantees on purpose, for the fault harness's
	// self-test. The zero value is the only one for real use.
	Unsafe Unsafe
}

// Unsafe holds switches that each break one guarantee, so that the fault
// harness can prove that its checkers catch the bug. Never set them outside
// tests.
type Unsafe struct {
	// StaleReads answers default reads and keepalives without the master
	// lease: for as long as Raft believes this node leads, and, once Raft has
	// deposed it, for 2 x HeartbeatTimeout more, as a leader that did not
	// notice would. Its lease log does not show it (the log says the node
	// stopped serving), so only the checkers of what clients saw can.
	StaleReads bool
	// GrantHeld makes the state machine grant an exclusive acquire over a
	// current holder. Every node must be started with it alike.
	GrantHeld bool
	// NoSessionGrace makes a new leader expire every inherited session at
	// once instead of giving each a full TTL.
	NoSessionGrace bool
	// RoundLease measures the master lease from the start of a
	// hashicorp/raft VerifyLeader round instead of through the lease
	// exchange: lockd's earlier rule, which a late answer to a heartbeat
	// sent before the round can stretch past a follower's promise.
	RoundLease bool
	// Unsafe holds the state machine's switches (see fsm.Unsafe): a
	// grant's token lower than an earlier one's (LowerToken), lock-delays
	// that end at a tenth of their length (EarlyLockDelay), hand-offs to
	// the last waiter (BreakFIFO), an acquire repeated with its first
	// request number granted anew (ForgetSeq), now and then a hand-off
	// that drops the head of a queue unseen (SkipWaiter: the dropped
	// waiter's acquire is not told, waits out its wait, then is refused),
	// a holder's repeated acquire refused (RefuseRepeat). Every node must
	// be started with them alike.
	fsm.Unsafe
	// StaleLag makes ?stale reads of a lock answer the newest state the
	// node had at least staleLag ago: never going back, always behind.
	StaleLag bool
	// ObserveStale makes a blocking query of an election (the path of
	// Observe) now and then answer with an older leader than one it has
	// answered before.
	ObserveStale bool
	// EarlyExpiry makes the leader expire a session 0.9 x TTL after its
	// create or last keepalive instead of after the full TTL.
	EarlyExpiry bool
	// ForgetGrant makes a restarted node skip the acquire and campaign
	// entries of the log it had before it started when it replays them,
	// so that it forgets grants it acknowledged before the restart.
	ForgetGrant bool
	// StaleGoesBack makes ?stale reads of a lock now and then answer an
	// older state than one they answered before.
	StaleGoesBack bool
	// KeepaliveWrites makes every keepalive commit an entry to the log (one
	// the state machine refuses, which changes nothing else).
	KeepaliveWrites bool
	// DeposedServing lets a leader keep serving reads and keepalives under
	// its master lease for 2 x HeartbeatTimeout past the lease's computed
	// end, even after Raft has made it a follower: a deposed leader that
	// serves while a newer one does. Its lease log records the extended
	// end.
	DeposedServing bool
	// DropWatchEvent makes a watch's answer leave out every event whose
	// index is a multiple of dropWatchEvery: a watcher that follows the
	// answers never sees those changes.
	DropWatchEvent bool
}

// dropWatchEvery is how often DropWatchEvent drops an event.
const dropWatchEvery = 5

// unsafeWatchEvents is a watch's answer events: all of them, or under
// DropWatchEvent those whose index is not a multiple of dropWatchEvery.
func (n *Node) unsafeWatchEvents(events []api.Event) []api.Event {
	if !n.cfg.Unsafe.DropWatchEvent {
		return events
	}
	return slices.DeleteFunc(events, func(e api.Event) bool { return e.Index%dropWatchEvery == 0 })
}

// unsafeState is the state of the unsafe switches that need one.
type unsafeState struct {
	observe goBack[api.Election] // ObserveStale
	stale   goBack[api.Lock]     // StaleGoesBack
	lag     lagBehind            // StaleLag
}

// unsafeTerm is the state of the unsafe switches in one leader term.
type unsafeTerm struct {
	deposedAt time.Time // when StaleReads first saw this term deposed
}

// unsafeSetUp gives the state machine its switches and says loudly that
// the node breaks guarantees, when any switch is on.
func (n *Node) unsafeSetUp() {
	u := n.cfg.Unsafe
	n.fsm.SetUnsafeGrantHeld(u.GrantHeld)
	n.fsm.SetUnsafe(u.Unsafe)
	if u != (Unsafe{}) {
		n.log.Warn("UNSAFE test switches are on; this node breaks lockd's guarantees on purpose",
			"unsafe", fmt.Sprintf("%+v", u))
	}
}

// unsafeDeposedServing reports whether DeposedServing keeps a deposed
// leader serving under its extended lease.
func (n *Node) unsafeDeposedServing() bool { return n.cfg.Unsafe.DeposedServing }

// unsafeStaleReads reports whether StaleReads answers without the master
// lease.
func (n *Node) unsafeStaleReads() bool { return n.cfg.Unsafe.StaleReads }

// unsafeNoSessionGrace reports whether a new leader expires the sessions
// it inherits at once (NoSessionGrace).
func (n *Node) unsafeNoSessionGrace() bool { return n.cfg.Unsafe.NoSessionGrace }

// unsafeSkipWaiter reports whether a waiter may be dropped from its queue
// unseen (SkipWaiter): its acquire is not told, and waits out its wait.
func (n *Node) unsafeSkipWaiter() bool { return n.cfg.Unsafe.SkipWaiter }

// unsafeKeepsServing reports whether a switch keeps the term cur, which
// Raft has ended, serving for now: DeposedServing while its extended
// lease lasts, StaleReads for a while after the node noticed, as a leader
// that missed its deposition.
func (n *Node) unsafeKeepsServing(cur *leaderTerm) bool {
	u := n.cfg.Unsafe
	if u.DeposedServing && !cur.ended() && cur.leaseRemaining() > 0 {
		return true
	}
	return u.StaleReads && !cur.ended() && cur.staleServing(n.clock.Now())
}

// unsafeLeaseEnd is the end of the master lease a round computed as
// until: until itself, or deposedExtension HeartbeatTimeouts later under
// DeposedServing.
func (n *Node) unsafeLeaseEnd(until time.Time) time.Time {
	if n.cfg.Unsafe.DeposedServing {
		return until.Add(deposedExtension * n.cfg.HeartbeatTimeout)
	}
	return until
}

// unsafeDeposedValid is leaseValid for a term Raft has deposed: on is
// false unless DeposedServing or StaleReads is set, and then valid says
// whether the term still serves: under StaleReads for deposedExtension
// HeartbeatTimeouts from when the node noticed, under DeposedServing
// until its extended lease ends.
func (t *leaderTerm) unsafeDeposedValid() (valid, on bool) {
	u := t.n.cfg.Unsafe
	if !u.DeposedServing && !u.StaleReads {
		return false, false
	}
	now := t.n.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if u.StaleReads && !t.staleServingLocked(now) || !u.StaleReads && !now.Before(t.leaseUntil) {
		t.logStopLocked()
		return false, true
	}
	return t.ready && !t.given && t.ctx.Err() == nil, true
}

// staleServing reports whether Unsafe.StaleReads keeps this deposed term
// answering reads at now: for deposedExtension HeartbeatTimeouts from the
// moment the node first noticed it no longer leads in it.
func (t *leaderTerm) staleServing(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.staleServingLocked(now)
}

func (t *leaderTerm) staleServingLocked(now time.Time) bool {
	if t.unsafe.deposedAt.IsZero() {
		t.unsafe.deposedAt = now
	}
	return now.Before(t.unsafe.deposedAt.Add(deposedExtension * t.n.cfg.HeartbeatTimeout))
}

// deposedExtension is how many HeartbeatTimeouts Unsafe.DeposedServing
// adds to every master lease.
const deposedExtension = 2

// unsafeSessionTTL is how long the leader keeps a session alive after a
// create or keepalive asking for ttl: ttl itself, unless EarlyExpiry is
// set.
func (n *Node) unsafeSessionTTL(ttl time.Duration) time.Duration {
	if n.cfg.Unsafe.EarlyExpiry {
		return ttl * 9 / 10
	}
	return ttl
}

// unsafeKeepaliveWrite commits, under KeepaliveWrites, an entry for a
// keepalive: one the state machine refuses, which changes nothing but
// the log.
func (n *Node) unsafeKeepaliveWrite(ctx context.Context) error {
	if !n.cfg.Unsafe.KeepaliveWrites {
		return nil
	}
	_, err := n.propose(ctx, fsm.Command{Op: fsm.OpTimersDue})
	return err
}

// unsafeStaleLock is the answer to a ?stale read of the lock name whose
// state is l: l, or under StaleGoesBack now and then an older state than
// one answered before, or under StaleLag the state the node had staleLag
// ago.
func (n *Node) unsafeStaleLock(name string, l api.Lock) api.Lock {
	if n.cfg.Unsafe.StaleGoesBack {
		l = n.unsafe.stale.answer(name, l, l.ModifyIndex, lockIndex)
	}
	if n.cfg.Unsafe.StaleLag {
		l = n.unsafe.lag.answer(name, l, l.ModifyIndex, time.Now())
	}
	return l
}

// unsafeObserved is the answer to a blocking query of the election name
// whose leader is e: e, or under ObserveStale now and then an older leader
// than one answered before.
func (n *Node) unsafeObserved(name string, e api.Election) api.Election {
	if n.cfg.Unsafe.ObserveStale {
		e = n.unsafe.observe.answer(name, e, e.Token, electionToken)
	}
	return e
}

// unsafeReplay is what the ForgetGrant switch makes the node forget when
// it replays its log: the acquire and campaign entries up to upTo, the
// last index the node had when it started (0: nothing).
type unsafeReplay struct{ upTo uint64 }

// unsafeReplay returns, under ForgetGrant, the entries to forget from
// logs, the log the node starts with.
func (e *raftEngine) unsafeReplay(logs raft.LogStore) (unsafeReplay, error) {
	if !e.n.cfg.Unsafe.ForgetGrant {
		return unsafeReplay{}, nil
	}
	last, err := logs.LastIndex()
	if err != nil {
		return unsafeReplay{}, fmt.Errorf("lease: read last index: %w", err)
	}
	return unsafeReplay{last}, nil
}

// forgets reports whether the entry l is skipped when applied.
func (r unsafeReplay) forgets(l *raft.Log) bool {
	if l.Index > r.upTo {
		return false
	}
	c, err := fsm.Decode(l.Data)
	return err == nil && (c.Op == fsm.OpAcquire || c.Op == fsm.OpCampaign)
}

// unsafeRoundLease is, under RoundLease, the end of the master lease by
// lockd's earlier rule (roundLease), with on true; on is false without
// the switch.
func (e *raftEngine) unsafeRoundLease(start time.Time) (until time.Time, on bool, err error) {
	if !e.n.cfg.Unsafe.RoundLease {
		return time.Time{}, false, nil
	}
	until, err = e.roundLease(start)
	return until, true, err
}

// roundLease is the rule lockd used before the lease exchange, kept only as
// the --unsafe-debug switch round-lease so that the fault harness can show
// it catches it: the lease runs from the start of a VerifyLeader round.
// hashicorp/raft completes such a round with any answer that arrives after
// it began, including a late answer to a heartbeat the follower received
// long before, so this lease can outlive the follower's promise by the
// answer's delay.
func (e *raftEngine) roundLease(start time.Time) (time.Time, error) {
	if err := e.raft.VerifyLeader().Error(); err != nil {
		return time.Time{}, raftErr(err)
	}
	return start.Add(e.n.cfg.leaseDuration()), nil
}

// staleLag is how far behind StaleLag keeps ?stale reads.
const staleLag = 5 * time.Second

// lagBehind is the state of StaleLag: per lock, the states the node had,
// with when it first answered each.
type lagBehind struct {
	mu   sync.Mutex
	seen map[string][]lagged
}

type lagged struct {
	at time.Time
	l  api.Lock
}

// answer returns the newest state of name first seen at least staleLag
// before now (the oldest kept if none is that old): it never goes back,
// and stays behind.
func (g *lagBehind) answer(name string, l api.Lock, k uint64, now time.Time) api.Lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string][]lagged{}
	}
	h := g.seen[name]
	if len(h) == 0 || h[len(h)-1].l.ModifyIndex != k {
		h = append(h, lagged{now, l})
	}
	i := 0
	for j := range h {
		if now.Sub(h[j].at) >= staleLag {
			i = j
		}
	}
	h = h[i:] // what is older than the answer is never answered again
	g.seen[name] = h
	return h[0].l
}

// goBack is the state of the unsafe switches that make reads go back
// (ObserveStale, StaleGoesBack): per name, the last answers with a
// distinct, nonzero key (an election's token, a lock's modify index).
type goBack[T any] struct {
	mu      sync.Mutex
	answers int
	seen    map[string][]T
}

// staleEvery is how often, in answers, such a switch answers with an
// older state when it has one.
const staleEvery = 3

// answer returns what is answered when the current state of name is v
// with key k: v itself, or, every staleEvery answers, the state two before
// the last one answered, older than the one in between, which a reader
// has likely seen already.
func (g *goBack[T]) answer(name string, v T, k uint64, key func(T) uint64) T {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string][]T{}
	}
	l := g.seen[name]
	if k != 0 && (len(l) == 0 || key(l[len(l)-1]) != k) {
		l = append(l, v)
		if len(l) > 3 {
			l = l[len(l)-3:]
		}
		g.seen[name] = l
	}
	g.answers++
	if len(l) == 3 && g.answers%staleEvery == 0 && key(l[0]) < key(l[1]) {
		return l[0]
	}
	return v
}

func electionToken(e api.Election) uint64 { return e.Token }

func lockIndex(l api.Lock) uint64 { return l.ModifyIndex }
