package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// wallStep steps one node's wall clock by hours, forward or back, as an
// NTP step or an operator's date command would, while its monotonic clock
// runs on (POST /v1/debug/clock {"wall_step": ...}). Half the time the
// node is the leader, whose clock is the one stamped into the entries it
// proposes. No guarantee of lockd may rest on a wall clock, so unlike the
// clock faults this one runs without --unsafe-clock, and any violation
// under it is a bug. Healing steps the clock back.
type wallStep struct {
	victim *proccluster.Node
}

// The step is drawn from this range of sizes, in either direction.
const minWallStep, maxWallStep = time.Hour, 48 * time.Hour

func (w *wallStep) Name() string { return "wall-step" }

func (w *wallStep) Available(ctx context.Context, env *Env) error {
	for _, n := range env.Cluster.Nodes {
		if !n.Alive() {
			continue
		}
		c, err := n.Clock(ctx)
		if err != nil {
			return err
		}
		if c.WallStep == nil {
			return errors.New("lockd does not step its wall clock (no wall_step in GET /v1/debug/clock)")
		}
		return nil
	}
	return errors.New("no running node")
}

func (w *wallStep) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	v, role := leaderOrNode(ctx, env, rng)
	if v == nil {
		return "", errors.New("no running node")
	}
	step := between(rng, minWallStep, maxWallStep).Round(time.Minute)
	if rng.IntN(2) == 0 {
		step = -step
	}
	w.victim = v
	if err := v.SetWallStep(ctx, step); err != nil {
		return "", err
	}
	return fmt.Sprintf("wall clock of %s %s stepped %v", role, v.ID, step), nil
}

func (w *wallStep) Heal(ctx context.Context, _ *Env) error {
	v := w.victim
	if v == nil || !v.Alive() {
		w.victim = nil
		return nil // a restarted process starts with its clock unstepped
	}
	if err := v.SetWallStep(ctx, 0); err != nil {
		return err // Pending: the schedule tries again before its end
	}
	w.victim = nil
	return nil
}

// Pending reports whether a step has not been undone yet.
func (w *wallStep) Pending() bool { return w.victim != nil }

func (w *wallStep) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+3*time.Second)
}
