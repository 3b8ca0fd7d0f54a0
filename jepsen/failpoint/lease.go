package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/jepsen/cluster"
)

// leaseSchedule is aimed at the master lease's boot hole: it cuts the
// leader from half of its followers, waits until one of them campaigns,
// then cuts the leader from the other half too, and kills and at once
// restarts that half. A restarted follower has forgotten that it heard from
// the leader; if it votes at once (no boot wait), the cut-off followers and
// it elect a new leader while the old one still serves reads under a lease
// that the restarted follower had confirmed just before it died. The readers of the lock
// workload ask every node, the old leader included.
type leaseSchedule struct{}

func (l *leaseSchedule) Name() string { return "lease-schedule" }

func (l *leaseSchedule) Available(ctx context.Context, env *Env) error {
	return (&partition{}).Available(ctx, env)
}

func (l *leaseSchedule) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return "", errors.New("no leader")
	}
	var followers []*cluster.Node
	for _, i := range rng.Perm(len(env.Cluster.Nodes)) {
		if n := env.Cluster.Nodes[i]; n != leader {
			followers = append(followers, n)
		}
	}
	half := len(followers) / 2
	cut, crash := followers[:half], followers[half:]
	for _, f := range cut {
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
		if f.Alive() {
			if err := f.SetFault(ctx, leader.ID, "both", "drop"); err != nil {
				return "", err
			}
		}
	}
	// Wait until a cut follower has given up on the leader and campaigns:
	// only then does a fresh vote from a restarted follower elect it at once.
	deadline := time.Now().Add(6 * time.Second)
	for campaigning(ctx, cut) == nil && time.Now().Before(deadline) && wait(ctx, 20*time.Millisecond) {
	}
	for _, f := range crash {
		// The old leader must not hear from the restarted follower either:
		// its answers (at a higher term, once it votes) would make the old
		// leader step down at once and close the window under test. Rules
		// set on the leader's side hold for both directions.
		if err := leader.SetFault(ctx, f.ID, "both", "drop"); err != nil {
			return "", err
		}
		if err := f.Restart(env.Binary); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("cut leader %s from %s, kill -9 and restart %s", leader.ID, ids(cut), ids(crash)), nil
}

func (l *leaseSchedule) Heal(ctx context.Context, env *Env) error {
	return (&partition{}).Heal(ctx, env)
}

func (l *leaseSchedule) Hold(_ *Env, rng *rand.Rand) time.Duration {
	return between(rng, 2*time.Second, 5*time.Second)
}

// campaigning returns a node of ns that is a Raft candidate, or nil.
func campaigning(ctx context.Context, ns []*cluster.Node) *cluster.Node {
	for _, n := range ns {
		if st, err := n.Status(ctx); err == nil && st.State == "Candidate" {
			return n
		}
	}
	return nil
}
