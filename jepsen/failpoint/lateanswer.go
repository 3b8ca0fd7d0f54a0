package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
)

// lateAnswer is aimed at a master lease that counts late answers. A leader
// L confirms its lease with a round of heartbeats; a follower promises not
// to vote for a HeartbeatTimeout from when it last heard from L. If an
// answer that F1 sent before a round began can complete the round, and the
// lease is measured from the round's start, the lease outlives F1's
// promise by as much as the answer was late. The schedule makes answers
// late and then takes L away:
//
//   - F1's messages to L (a majority of L's followers less one: one of a
//     three-node cluster's two) are delayed by a delay rule on F1 (see
//     lateRange for how long), so every answer reaches L that late, while
//     L's heartbeats reach F1 at once and F1 goes on following L;
//   - the other followers, F2, are cut from L (drop, both ways) until they
//     have no leader: then F1's vote is all a new leader waits for, and L's
//     lease rests on F1's late answers alone;
//   - L's messages to F1 are then blackholed, which ends F1's promise (it
//     hears nothing more from L) while F1's late answers, already on their
//     way, still arrive and may complete rounds begun after F1 last heard
//     from L; once they have all arrived L is cut from F1 for good (drop).
//
// F1 and F2 elect a new leader one to two HeartbeatTimeouts after F1 last
// heard from L. The workers' clients are cut from L from then on (like
// clients on the new side of a partition) and write through the new
// leader, while the per-node readers go on asking L, and so does a reader
// of the schedule's own, one read after another: a read that L answers
// from its lease after the new leader acknowledged a write is stale, and
// the linearizability checker, which orders every node's reads against
// every client's writes, rejects it.
//
// Raft's own step-down (LeaderLeaseTimeout) must not end L's service
// before the schedule has cut it off: the delay is drawn below the nodes'
// leader-lease timeout (lateRange), so that L, which hears from F1 alone
// once F2 is cut, hears from it often enough to go on leading. After the
// cut L steps down one LeaderLeaseTimeout after the last late answer came
// in, and F1 gives up on L one to two HeartbeatTimeouts after it last
// heard from it: with lockd's defaults (leader lease 250 ms, heartbeat 500
// ms) Raft deposes L before F1 and F2 can elect anyone, so a lease that
// counted late answers would still not serve beside the new leader. The
// window for such a lease opens only where the leader-lease timeout is
// close to the heartbeat timeout (lockd allows them equal); the self-test
// runs the schedule that way (600 ms each, no margin, no drift). In
// campaigns at the defaults the schedule still checks that lockd serves
// nothing stale from a leader cut off while its answers come late.
//
// A cycle reaches the schedule's aim when L still leads with a master
// lease at the moment it is cut off, F2 has lost its leader, the load's
// writes were acknowledged through F1's late answers alone (after F2 was
// cut), and F1 and F2 elect a new leader; the schedule counts the cycles
// that do (Aimed). The fault's description says how long L's lease still
// had to run when the last late answer was in ("lease over by" when it
// had already run out), and when a new leader was seen, both from the
// moment L was cut off.
//
// The window is as wide as the answers are late only if answers stream
// in. With heartbeats alone it is not: hashicorp/raft sends a follower its
// next heartbeat only once the last one was answered, and lockd starts a
// round a fifth of a HeartbeatTimeout after the one before ended, so a
// round that a late answer completes began at most about that long after
// F1 last heard from L. So from before F2 is cut until the cycle ends the
// schedule keeps L busy (writeLoad): writes of its own through L, outside
// the checked history, one started every few milliseconds on one of many
// locks, each of which waits for F1's late answer to commit; Raft
// pipelines their appends to F1 (lockd lets 64 wait for their answers),
// and every pipelined answer also completes the rounds under way. And
// consistent reads of its own through L, one after another, make L start
// a round the moment the one before ended. Then the last round that a late
// answer completes began only milliseconds before that answer arrived,
// about the delay after F1 last heard from L, and L's lease outlives F1's
// promise by nearly the delay. F1 gives up on L at the first tick of its
// randomized timer (ticks one to two HeartbeatTimeouts apart) after its
// promise ran out, so the new leader comes inside the old lease in a
// large share of cycles (jepsen/RESULTS.md). The overlap lasts up to a few
// hundred milliseconds, so the schedule does not wait for the workers to
// write and the per-node reader to come by: the moment it sees the new
// leader it takes a lock of its own (lateLock) through it, and from the
// cut on it reads every lock from L one read after another, all recorded
// in the history. The self-test runs it with 600 ms timeouts, no margin
// and no drift allowance.
type lateAnswer struct {
	reads  *fastReads
	writer *writer
	load   *writeLoad
	leader string
	missed []string // why the last Inject missed its aim; nil if it did not
}

// writerTTL is the TTL of the schedule's writer's session: long enough to
// outlast the time without a leader.
const writerTTL = 10 * time.Second

// The delay of F1's answers is drawn from this range where the nodes'
// timeouts allow it (lateRange).
const minLate, maxLate = 300 * time.Millisecond, 400 * time.Millisecond

// lateMargin keeps the delay this far below the longest that Raft's
// step-down allows, for the scheduler's and the transport's own delays.
const lateMargin = 20 * time.Millisecond

// lateRange is the range the delay of F1's answers is drawn from, derived
// from the nodes' timeouts:
//
//   - below LeaderLeaseTimeout: once F2 is cut, F1 is all of L's quorum,
//     and L steps down when it has heard nothing from F1 for that long
//     (hashicorp/raft checks exactly when the last answer gets that old).
//     F1's answers come one delay after they were sent, and hashicorp/raft
//     sends F1 its next heartbeat only once the last one was answered, a
//     tenth to a fifth of a HeartbeatTimeout later, its next appends only
//     once earlier ones were answered (two in flight): with the load's
//     appends answers come about a delay apart, with heartbeats alone up
//     to a delay and a fifth of the heartbeat timeout, so the delay stays
//     below the lease timeout less that fifth and lateMargin;
//   - below four fifths of HeartbeatTimeout: F1 hears from L only as often
//     as L sends, once per answer, and later than that F1 would leave L
//     on its own;
//   - at most maxLate, and from minLate where that still leaves room (the
//     wider the delay, the wider the window a lease that counts late
//     answers opens), else from three quarters of the upper bound.
//
// With lockd's defaults (leader lease 250 ms, heartbeat 500 ms) that is
// 97-130 ms; with the self-test's 600 ms each, 300-400 ms. A
// LeaderLeaseTimeout of 0 (not known) counts as HeartbeatTimeout, which
// lockd allows at most.
func lateRange(env *Env) (lo, hi time.Duration) {
	ht, llt := env.HeartbeatTimeout, env.LeaderLeaseTimeout
	if llt <= 0 || llt > ht && ht > 0 {
		llt = ht
	}
	hi = maxLate
	if llt > 0 {
		hi = min(hi, llt-ht/5-lateMargin)
	}
	if ht > 0 {
		hi = min(hi, ht*4/5)
	}
	hi = max(hi, time.Millisecond)
	return min(minLate, hi*3/4), hi
}

func (l *lateAnswer) Name() string { return "late-answer" }

func (l *lateAnswer) Available(ctx context.Context, env *Env) error { return delayAvailable(ctx, env) }

func (l *lateAnswer) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	leader, followers := leaderAndFollowers(ctx, env, rng)
	if leader == nil {
		return "", errors.New("no leader")
	}
	if len(followers) < 2 {
		return "", errors.New("needs at least three nodes")
	}
	// With L, the late followers are one short of a majority of the
	// cluster; with the others they are a majority without L.
	k := (len(env.Cluster.Nodes) - 1) / 2
	late, cut := followers[:k], followers[k:]
	lo, hi := lateRange(env)
	d := between(rng, lo, hi).Round(time.Millisecond)
	var notes []string
	l.missed = []string{"the schedule stopped before the cut"}

	urls := make([]string, len(followers))
	for i, f := range followers {
		urls[i] = f.HTTP
	}
	w, err := newWriter(ctx, env.Rec, env.Clients, urls, writerTTL, traffic.DriftBound(env.MaxClockDrift))
	if err != nil {
		notes = append(notes, "no session for the writer: "+err.Error())
	}
	l.writer = w
	l.load, err = startWriteLoad(ctx, env.Clients, leader.HTTP, writerTTL)
	if err != nil {
		notes = append(notes, "no session for the load: "+err.Error())
	}

	for _, f := range late {
		if err := f.SetDelay(ctx, leader.ID, "out", d); err != nil {
			return "", fmt.Errorf("delay on %s: %w", f.ID, err)
		}
	}
	for _, f := range cut {
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
		if err := f.SetFault(ctx, leader.ID, "both", "drop"); err != nil {
			return "", err
		}
	}
	// Writes acknowledged from a moment after the cut on were committed
	// through F1's late answers alone: an answer of F2's that made the
	// quorum before the cut is acknowledged within milliseconds.
	wait(ctx, 20*time.Millisecond)
	var before int64
	if l.load != nil {
		before = l.load.writes.Load()
	}
	// The cut followers lose their leader one to two HeartbeatTimeouts
	// after they last heard from it.
	var missed []string
	if !leaderless(ctx, cut, 3*env.HeartbeatTimeout+time.Second) {
		missed = append(missed, ids(cut)+" still see a leader")
	}
	st, err := leader.Status(ctx)
	switch {
	case err != nil || st.State != "Leader":
		missed = append(missed, leader.ID+" no longer leads before it is cut off")
	case st.MasterLeaseRemaining == nil || st.MasterLeaseRemaining.D() <= 0:
		missed = append(missed, leader.ID+" holds no master lease before it is cut off")
	}
	var through int64 // acknowledged through F1's late answers alone
	if l.load != nil {
		through = l.load.writes.Load() - before
	}
	if through <= 0 {
		missed = append(missed, "no write of load acknowledged through the late answers")
	}

	// Take L away: F1 hears nothing more from it, and its late answers
	// drain into L.
	env.Writes.Cut(leader.HTTP)
	l.reads, l.leader = startFastReads(env.Rec, env.Clients, leader.HTTP, leader.ID), leader.ID
	cutAt := time.Now()
	for _, f := range late {
		if err := leader.SetFault(ctx, f.ID, "out", "blackhole"); err != nil {
			return "", err
		}
	}
	wait(ctx, d+50*time.Millisecond)
	for _, f := range late {
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
	}
	var loaded int64
	if l.load != nil {
		loaded = l.load.writes.Load()
	}
	leaseTo := "no lease"
	if st, err := leader.Status(ctx); err == nil && st.MasterLeaseRemaining != nil {
		if left := st.MasterLeaseRemaining.D(); left > 0 {
			leaseTo = fmt.Sprintf("lease to +%v", (time.Since(cutAt) + left).Round(time.Millisecond))
		} else {
			leaseTo = fmt.Sprintf("lease over by +%v", time.Since(cutAt).Round(time.Millisecond))
		}
	}
	elected := "no new leader within 3s"
	n, at, ok := newLeader(ctx, followers, 3*time.Second)
	if !ok {
		missed = append(missed, "no new leader within 3s")
	}
	if ok {
		if w != nil {
			w.acquire(ctx)
		}
		elected = fmt.Sprintf("%s leads at +%v, %s taken through it at +%v", n.ID, at.Sub(cutAt).Round(time.Millisecond),
			lateLock, time.Since(cutAt).Round(time.Millisecond))
	}
	l.missed = missed
	what := fmt.Sprintf("%s's answers to leader %s %v late (drawn from %v-%v: leader lease timeout %v, heartbeat timeout %v; "+
		"in lockd's transport hook, no netem here), %s cut from it, %d writes of load, %d of them through the late answers alone; %s cut off (%s; %s)",
		ids(late), leader.ID, d, lo, hi, leaseTimeout(env), env.HeartbeatTimeout, ids(cut), loaded, through, leader.ID, leaseTo, elected)
	if len(notes) > 0 {
		what += " (" + strings.Join(notes, ", ") + ")"
	}
	return what, nil
}

// Reached reports whether the last Inject reached the schedule's aim (see
// lateAnswer).
func (l *lateAnswer) Reached() (bool, string) {
	return len(l.missed) == 0, strings.Join(l.missed, ", ")
}

// leaseTimeout is env's LeaderLeaseTimeout, or its HeartbeatTimeout when
// that is not known.
func leaseTimeout(env *Env) time.Duration {
	if env.LeaderLeaseTimeout > 0 {
		return env.LeaderLeaseTimeout
	}
	return env.HeartbeatTimeout
}

func (l *lateAnswer) Heal(ctx context.Context, env *Env) error {
	if l.reads != nil {
		env.Rec.Eventf("late-answer: %s answered %d reads after it was cut off", l.leader, l.reads.stop())
		l.reads = nil
	}
	l.load.stop()
	env.Writes.Uncut()
	err := (&partition{}).Heal(ctx, env)
	l.load.close()
	l.load = nil
	l.writer.close()
	l.writer = nil
	return err
}

// Hold leaves the old leader cut off a little longer: Inject returns once
// a new leader is seen, and the old leader's lease ends at most one
// HeartbeatTimeout and the delay after it was cut off.
func (l *lateAnswer) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, env.HeartbeatTimeout/2, env.HeartbeatTimeout)
}

// leaderless waits until none of ns reports a leader, at most within.
func leaderless(ctx context.Context, ns []*proccluster.Node, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		none := true
		for _, n := range ns {
			if st, err := n.Status(ctx); err != nil || st.Leader != nil {
				none = false
				break
			}
		}
		if none {
			return true
		}
		if !wait(ctx, 10*time.Millisecond) {
			break
		}
	}
	return false
}

// newLeader polls ns until one of them leads, and returns it and when it
// was seen; ok is false if none did within.
func newLeader(ctx context.Context, ns []*proccluster.Node, within time.Duration) (*proccluster.Node, time.Time, bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, n := range ns {
			if st, err := n.Status(ctx); err == nil && st.State == "Leader" {
				return n, time.Now(), true
			}
		}
		if !wait(ctx, 5*time.Millisecond) {
			break
		}
	}
	return nil, time.Now(), false
}
