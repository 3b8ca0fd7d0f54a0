package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockd/lockd/internal/proccluster"
	"github.com/lockd/lockd/jepsen/traffic"
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
//     three-node cluster's two) are delayed 300-400 ms by a delay rule on
//     F1, so every answer reaches L that late, while L's heartbeats reach
//     F1 at once and F1 goes on following L;
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
// first: the schedule is meant to run with --leader-lease-timeout equal to
// --heartbeat-timeout, which lockd allows. The fault's description says
// how long L's lease still had to run when the last late answer was in
// ("lease over by" when it had already run out), and when a new leader was
// seen, both from the moment L was cut off.
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
}

// writerTTL is the TTL of the schedule's writer's session: long enough to
// outlast the time without a leader.
const writerTTL = 10 * time.Second

// The delay of F1's answers is drawn from this range.
const minLate, maxLate = 300 * time.Millisecond, 400 * time.Millisecond

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
	d := between(rng, minLate, maxLate).Round(time.Millisecond)
	if ht := env.HeartbeatTimeout; ht > 0 && d > ht*4/5 {
		d = ht * 4 / 5 // later than that, F1 would leave L on its own
	}
	var notes []string

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
	// The cut followers lose their leader one to two HeartbeatTimeouts
	// after they last heard from it.
	if !leaderless(ctx, cut, 3*env.HeartbeatTimeout+time.Second) {
		notes = append(notes, ids(cut)+" still see a leader")
	}
	if st, err := leader.Status(ctx); err != nil || st.State != "Leader" {
		notes = append(notes, leader.ID+" no longer leads before it is cut off")
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
	if n, at, ok := newLeader(ctx, followers, 3*time.Second); ok {
		if w != nil {
			w.acquire(ctx)
		}
		elected = fmt.Sprintf("%s leads at +%v, %s taken through it at +%v", n.ID, at.Sub(cutAt).Round(time.Millisecond),
			lateLock, time.Since(cutAt).Round(time.Millisecond))
	}
	what := fmt.Sprintf("%s's answers to leader %s %v late, %s cut from it, %d writes of load; %s cut off (%s; %s)",
		ids(late), leader.ID, d, ids(cut), loaded, leader.ID, leaseTo, elected)
	if len(notes) > 0 {
		what += " (" + strings.Join(notes, ", ") + ")"
	}
	return what, nil
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
