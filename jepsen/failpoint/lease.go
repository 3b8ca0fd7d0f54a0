package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
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
//     (other processes, which the gate does not hold) are paused (SIGSTOP)
//     for as long, and the schedule waits out what the leader still
//     writes on its own (drainTime: expiries of the sessions the
//     workloads abandoned and of the paused fence clients', ends of
//     lock-delays) before it waits for a settled log. Without that, under
//     every workload of a campaign, the log never settled (0 cycles of 4
//     lined up: "log not settled", "log behind").
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
//
// A cycle lines up (reaches the schedule's aim, counted through Aimed)
// when the log settled, a vote round of F2's was seen, F2's log was not
// behind the leader's when F1 was killed, the old leader still led then,
// and the restarted followers answered again. Whether F2 then wins while
// the old lease runs is what the switch under test decides. Raft's own
// step-down bounds that window: the old leader hears from no follower
// once F1 is killed, and steps down one LeaderLeaseTimeout later; F2's
// next round comes restartLead to an ElectionTimeout plus restartLead
// after the kill. At lockd's defaults (250 ms against 500 ms) a lockd
// without the boot wait is caught only when that round comes early; the
// self-test runs the schedule with all three timeouts at 1 s.
type leaseSchedule struct {
	missed []string // why the last Inject missed its aim; nil if it did not
}

// drainTime is how long after the workers' writes are held back and the
// fence clients paused the leader may still write entries of its own: the
// expiry of a session abandoned (or paused) just before, a TTL later
// (traffic/expiry.go's sessions have 1 s, traffic/lockdelay.go's and the
// fence clients' and the etcd client's leases the run's TTL, the latter
// in whole seconds), and the end of its lock-delay
// (traffic/lockdelay.go: up to 1 s)
// after that, with room for the leader's batching of expiries. 0 when no
// workload abandons a session: the plain lock workload writes only
// through the gate.
func drainTime(env *Env) time.Duration {
	if env.Resource == nil && env.EtcdClient == nil && !slices.Contains(env.Workloads, traffic.Locks) && !slices.Contains(env.Workloads, traffic.Expiry) {
		return 0
	}
	// The etcd client's leases count whole seconds.
	ttl := max(env.TTL, time.Second)
	if env.EtcdClient != nil {
		ttl = ttl.Round(time.Second) + time.Second
	}
	return ttl + time.Second + 500*time.Millisecond
}

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
	l.missed = []string{"the schedule stopped before the kill"}

	// Quiet the log: every node has applied the same entries, and no
	// worker write is in flight.
	defer env.Writes.Open()
	paused := pauseChildren(env)
	paused0 := paused
	defer func() { resumeChildren(paused) }() // at once after the kill, below; here if Inject fails first
	closed := time.Now()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := env.Writes.Close(qctx); err != nil {
		notes = append(notes, "writes still in flight")
	}
	cancel()
	wait(ctx, time.Until(closed.Add(drainTime(env))))
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
	var missed []string
	began, ok := awaitRound(ctx, cut, crash, base, 6*env.ElectionTimeout+3*time.Second)
	if !ok {
		notes = append(notes, "no vote round seen")
		missed = append(missed, "no vote round seen")
	}
	wait(ctx, time.Until(began.Add(env.ElectionTimeout-restartLead)))
	for _, f := range cut {
		if behind(ctx, leader, f) {
			notes = append(notes, f.ID+"'s log behind")
			missed = append(missed, f.ID+"'s log behind")
		}
	}
	if st, err := leader.Status(ctx); err != nil || st.State != "Leader" {
		missed = append(missed, leader.ID+" no longer leads at the kill")
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
	// The old leader hears from no one now and can commit nothing: the
	// fence clients may write again.
	resumeChildren(paused)
	paused = nil
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
	up, ok := answers(ctx, crash, 5*time.Second)
	if ok {
		back = "answering after " + up.Sub(killed).Round(time.Millisecond).String()
	}
	if !ok {
		missed = append(missed, ids(crash)+" "+back)
	}
	l.missed = missed
	what := fmt.Sprintf("cut %s from leader %s and from %s; kill -9 and restart %s %v after a vote round, %s",
		ids(cut), leader.ID, ids(crash), ids(crash), killed.Sub(began).Round(time.Millisecond), back)
	if len(paused0) > 0 {
		what += fmt.Sprintf("; %d fence clients paused from before the quiet to the kill", len(paused0))
	}
	if d := drainTime(env); d > 0 {
		what += fmt.Sprintf("; waited %v for the leader's own writes to end", d)
	}
	if len(notes) > 0 {
		what += " (" + strings.Join(notes, ", ") + ")"
	}
	return what, nil
}

// Reached reports whether the last Inject lined the schedule up (see
// leaseSchedule).
func (l *leaseSchedule) Reached() (bool, string) {
	return len(l.missed) == 0, strings.Join(l.missed, ", ")
}

// pauseChildren stops the running fence clients (SIGSTOP) and returns
// those it stopped.
func pauseChildren(env *Env) []*traffic.Child {
	var kids []*traffic.Child
	if env.Resource != nil {
		kids = env.Resource.Children()
	}
	if env.EtcdClient != nil {
		kids = append(kids, env.EtcdClient)
	}
	var out []*traffic.Child
	for _, c := range kids {
		if c.Pause() == nil {
			out = append(out, c)
		}
	}
	return out
}

// resumeChildren continues the fence clients pauseChildren stopped.
func resumeChildren(cs []*traffic.Child) {
	for _, c := range cs {
		_ = c.Resume()
	}
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
func lastIndex(st api.Cluster) uint64 {
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
