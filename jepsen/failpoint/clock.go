package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/jepsen/cluster"
)

// clockFault skews one node's injectable clock (POST /v1/debug/clock):
// either a jump of its offset or a change of its rate. A rate further from
// 1 than --max-clock-drift is outside what the master lease tolerates, so
// these faults run only with the harness's unsafe clock flag, and a
// violation under them is expected rather than a bug.
type clockFault struct {
	rate   bool
	victim *cluster.Node
}

func (c *clockFault) Name() string {
	if c.rate {
		return "clock-rate"
	}
	return "clock-skew"
}

func (c *clockFault) Available(ctx context.Context, env *Env) error {
	if !env.UnsafeClock {
		return errors.New("clock faults need --unsafe-clock")
	}
	for _, n := range env.Cluster.Nodes {
		if n.Alive() {
			_, err := n.Clock(ctx)
			return err
		}
	}
	return errors.New("no running node")
}

func (c *clockFault) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	c.victim = randomNode(env, rng, nil)
	if rng.IntN(2) == 0 {
		c.victim = leaderOrAny(ctx, env, rng)
	}
	if c.victim == nil {
		return "", errors.New("no running node")
	}
	offset, rate := time.Duration(0), 1.0
	if c.rate {
		rate = 0.5 + rng.Float64() // 0.5x .. 1.5x
	} else {
		offset = between(rng, -5*time.Second, 5*time.Second)
	}
	if err := c.victim.SetClock(ctx, offset, rate); err != nil {
		return "", err
	}
	return fmt.Sprintf("clock of %s: offset %v, rate %.2f", c.victim.ID, offset, rate), nil
}

func (c *clockFault) Heal(ctx context.Context, _ *Env) error {
	if c.victim == nil || !c.victim.Alive() {
		return nil
	}
	v := c.victim
	c.victim = nil
	if !c.rate {
		return nil // a jump stays: only rates matter, and there is no jumping back safely
	}
	return v.SetClock(ctx, 0, 1)
}

func (c *clockFault) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+3*time.Second)
}
