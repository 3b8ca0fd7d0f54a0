package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/proccluster"
)

// leaseSchedule is aimed at the master lease's boot hole. A follower F1
// that confirmed the leader's lease and is then killed and restarted has
// forgotten that it heard from the leader; if it votes at once (no boot
// wait), another follower F2 that was cut off from the leader can win an
// election while the old leader still serves reads under the lease F1
// confirmed. The readers of the lock workload ask every node, the old
// leader included, so a write through F2 followed by a read from the old
// leader is a stale read.
//
// Five things must line up for the window to open, and the schedule
// arranges each:
//
//   - F1 grants its vote only to a candidate whose log is as up to date as
//     its own. Writes would keep flowing through the old leader and F1
//     after F2 is cut, so the schedule first holds the workers' writes
//     back (Env.Writes) until F1 has been restarted. The fence clients
//     (other processes) and the leader's own session expiries still
//     write: with those workloads the window often stays shut, and the
//     fault's description says "log behind".
//   - F2 asks for votes once per round, one to two ElectionTimeouts apart
//     (hashicorp/raft draws the timeout at random). F2 is also cut from
//     F1, so each round's dial to F1 is refused and counted by F2's fault
//     rules (GET /v1/debug/faults); the schedule sees a round begin and
//     kills F1 so that it is back up just before the next round can come.
//   - A connection F2 pooled to F1's old process would fail F2's first
//     request to the new one and lose that round: a refused dial also
//     shows that F2's pool to F1 is empty. F2's rule against F1 is lifted
//     once F1 is restarted.
//   - The old leader must not hear from the restarted F1 (a higher term in
//     its answers would make it step down): F1 is cut from it before the
//     restart.
//   - A write sent to the old leader hangs until it steps down, and a
//     client that finds no leader on the new side tries the old one: the
//     workers' clients are cut from the old leader (Env.Writes.Cut) from
//     the restart until the heal, like clients on the new side of a
//     partition. The per-node readers are not.
//
// With the boot wait (the default), F1 starts Raft one HeartbeatTimeout
// after it boots, when the lease it confirmed has run out: the same
// schedule must then find nothing.
type leaseSchedule struct{}

// restartLead is how long before a vote round can come the schedule
// kills the followers: a lockd process is back (Raft running, without the
// boot wait) 20-30 ms after kill -9 on an idle machine. It is fixed, not
// measured, so that the schedule is the same with and without the boot
// wait (with it, a node answers only after the wait).
const restartLead = 60 * time.Millisecond

func (l *leaseSchedule) Name() string { return "lease-schedule" }

func (l *leaseSchedule) Available(ctx context.Context, env *Env) error {
	return (&partition{}).Available(ctx, env)
}

func (l *leaseSchedule) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	leader, followers := leaderAndFollowers(ctx, env, rng)
	if leader == nil {
		return "", errors.New("no leader")
	}
	half := len(followers) / 2
	cut, crash := followers[:half], followers[half:]
	var notes []string

	// Quiet the log: every node has applied the same entries, and no
	// worker write is in flight.
	defer env.Writes.Open()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := env.Writes.Close(qctx); err != nil {
		notes = append(notes, "writes still in flight")
	}
	cancel()
	if !settled(ctx, env.Cluster.Nodes, 300*time.Millisecond, 3*time.Second) {
		notes = append(notes, "log not settled")
	}

	// Cut the candidates-to-be from the leader, and from the followers
	// that will be restarted: their requests for votes to those are then
	// refused at dial, which the nodes count, so the schedule sees each
	// round begin; and they hold no pooled connection to the old process,
	// which would fail their first request to the restarted one.
	base := map[string]uint64{}
	for _, f := range cut {
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
		if err := f.SetFault(ctx, leader.ID, "both", "drop"); err != nil {
			return "", err
		}
		for _, c := range crash {
			if err := f.SetFault(ctx, c.ID, "both", "drop"); err != nil {
				return "", err
			}
			n, err := f.RefusedDials(ctx, c.ID)
			if err != nil {
				return "", err
			}
			base[f.ID+">"+c.ID] = n
		}
	}
	// A round comes one to two ElectionTimeouts after the one before: the
	// restarted followers should be back just before the earliest next one.
	began, ok := awaitRound(ctx, cut, crash, base, 6*env.ElectionTimeout+3*time.Second)
	if !ok {
		notes = append(notes, "no vote round seen")
	}
	wait(ctx, time.Until(began.Add(env.ElectionTimeout-restartLead)))
	for _, f := range cut {
		if behind(ctx, leader, f) {
			notes = append(notes, f.ID+"'s log behind")
		}
	}
	killed := time.Now()
	for _, f := range crash {
		// The old leader must not hear from the restarted follower: its
		// answers, at a higher term once it voted, would end the old
		// leader's term at once. Rules set on the leader's side hold for
		// both directions.
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
		if err := f.Restart(env.Binary); err != nil {
			return "", err
		}
	}
	for _, f := range cut {
		for _, c := range crash {
			if err := f.HealPeer(ctx, c.ID); err != nil {
				return "", err
			}
		}
	}
	// Clients that can reach only the new side write through the new
	// leader; the readers go on asking every node.
	env.Writes.Cut(leader.HTTP)
	env.Writes.Open()
	back := "not answering after 5s"
	if up, ok := answers(ctx, crash, 5*time.Second); ok {
		back = "answering after " + up.Sub(killed).Round(time.Millisecond).String()
	}
	what := fmt.Sprintf("cut %s from leader %s and from %s; kill -9 and restart %s %v after a vote round, %s",
		ids(cut), leader.ID, ids(crash), ids(crash), killed.Sub(began).Round(time.Millisecond), back)
	if len(notes) > 0 {
		what += " (" + strings.Join(notes, ", ") + ")"
	}
	return what, nil
}

func (l *leaseSchedule) Heal(ctx context.Context, env *Env) error {
	env.Writes.Uncut()
	return (&partition{}).Heal(ctx, env)
}

func (l *leaseSchedule) Hold(_ *Env, rng *rand.Rand) time.Duration {
	return between(rng, 2*time.Second, 5*time.Second)
}

// awaitRound polls the cut nodes' refused dials to the crash nodes until
// one count moves past base (keyed "cut>crash"): a round of votes began.
// It returns when it saw that, or now and false after within.
func awaitRound(ctx context.Context, cut, crash []*proccluster.Node, base map[string]uint64, within time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, f := range cut {
			for _, c := range crash {
				if n, err := f.RefusedDials(ctx, c.ID); err == nil && n > base[f.ID+">"+c.ID] {
					return time.Now(), true
				}
			}
		}
		if !wait(ctx, 5*time.Millisecond) {
			break
		}
	}
	return time.Now(), false
}

// settled waits until every running node's log ends at the same index and
// it has not moved for quiet, at most within. It reports whether it saw
// that.
func settled(ctx context.Context, ns []*proccluster.Node, quiet, within time.Duration) bool {
	deadline := time.Now().Add(within)
	var last uint64
	var since time.Time
	for time.Now().Before(deadline) {
		idx, same := uint64(0), true
		for _, n := range ns {
			if !n.Alive() || n.Paused() {
				continue
			}
			st, err := n.Status(ctx)
			if err != nil {
				same = false
				break
			}
			if idx != 0 && lastIndex(st) != idx {
				same = false
			}
			idx = max(idx, lastIndex(st))
		}
		switch {
		case !same || idx != last:
			last, since = idx, time.Now()
		case time.Since(since) >= quiet:
			return true
		}
		if !wait(ctx, 20*time.Millisecond) {
			return false
		}
	}
	return false
}

// behind reports whether the leader's log has entries that n's has not:
// n's candidacy would then be refused by the followers that have them.
func behind(ctx context.Context, leader, n *proccluster.Node) bool {
	a, err1 := leader.Status(ctx)
	b, err2 := n.Status(ctx)
	return err1 == nil && err2 == nil && lastIndex(a) > lastIndex(b)
}

// lastIndex is the index of a node's last log entry, which Raft's vote
// check compares (the applied index where the node does not say).
func lastIndex(st wire.Cluster) uint64 {
	if st.LastLogIndex != 0 {
		return st.LastLogIndex
	}
	return st.AppliedIndex
}

// answers polls ns until every one answers GET /v1/cluster, and returns
// when that was; ok is false if that did not happen within.
func answers(ctx context.Context, ns []*proccluster.Node, within time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(within)
	for _, n := range ns {
		for {
			if _, err := n.Status(ctx); err == nil {
				break
			}
			if time.Now().After(deadline) || !wait(ctx, 5*time.Millisecond) {
				return time.Time{}, false
			}
		}
	}
	return time.Now(), true
}
