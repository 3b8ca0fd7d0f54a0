package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/proccluster"
)

// clockFault changes one node's clock (POST /v1/debug/clock): a jump of
// its offset, or a change of its rate. A node at rate r also runs Raft's
// heartbeat and election timers at r (lockd reloads them at the nominal
// timeouts divided by r) and tells its promises on its own clock, so a
// fast follower times out early, the case the master lease's drift
// allowance exists for.
//
//   - clock-drift: one node, leader or follower, at a rate within the
//     lease's drift bound (1 ± --max-clock-drift). lockd must stay safe
//     under it, so it runs without --unsafe-clock.
//   - clock-rate: a rate of 0.5 to 1.5, far outside the bound; only with
//     the harness's unsafe clock flag, and a violation under it is
//     expected rather than a bug.
//   - clock-skew: a jump of the offset (rate 1); also only with the flag.
type clockFault struct {
	kind   string // "skew", "rate" or "drift"
	victim *proccluster.Node
}

func (c *clockFault) Name() string { return "clock-" + c.kind }

func (c *clockFault) Available(ctx context.Context, env *Env) error {
	if c.kind != "drift" && !env.UnsafeClock {
		return errors.New("clock faults beyond the drift bound need --unsafe-clock")
	}
	return clockAvailable(ctx, env)
}

func clockAvailable(ctx context.Context, env *Env) error {
	for _, n := range env.Cluster.Nodes {
		if n.Alive() {
			_, err := n.Clock(ctx)
			return err
		}
	}
	return errors.New("no running node")
}

// drift is the nodes' drift bound: env's, else lockd's default.
func drift(env *Env) float64 {
	if env.MaxClockDrift > 0 {
		return env.MaxClockDrift
	}
	if env.MaxClockDrift < 0 { // --max-clock-drift 0: no drift tolerated
		return 0
	}
	return lease.DefaultConfig().MaxClockDrift
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
	switch c.kind {
	case "rate":
		rate = 0.5 + rng.Float64() // 0.5x .. 1.5x
	case "drift":
		d := drift(env)
		rate = 1 - d + 2*d*rng.Float64()
	default:
		offset = between(rng, -5*time.Second, 5*time.Second)
	}
	var err error
	if c.kind == "skew" {
		err = c.victim.SetClock(ctx, offset, rate)
	} else {
		err = setRate(ctx, c.victim, rate)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("clock of %s: offset %v, rate %.4f", c.victim.ID, offset, rate), nil
}

// setRate makes n's clock run at rate from now on, from where it stands:
// a clock that ran slow or fast keeps the time it lost or gained, as a
// real clock would, instead of jumping back to real time. A jump is
// another fault (clock-skew): a leader's clock jumping forward ends its
// session deadlines and lock-delays early.
func setRate(ctx context.Context, n *proccluster.Node, rate float64) error {
	cur, err := n.Clock(ctx)
	if err != nil {
		return err
	}
	offset, err := time.ParseDuration(cur.Offset)
	if err != nil {
		return fmt.Errorf("clock of %s: offset %q: %w", n.ID, cur.Offset, err)
	}
	return n.SetClock(ctx, offset, rate)
}

func (c *clockFault) Heal(ctx context.Context, _ *Env) error {
	if c.victim == nil || !c.victim.Alive() {
		return nil
	}
	v := c.victim
	c.victim = nil
	if c.kind == "skew" {
		return nil // a jump stays: only rates matter, and there is no jumping back safely
	}
	return setRate(ctx, v, 1)
}

func (c *clockFault) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+3*time.Second)
}

// fastFollowers runs every follower's clock (and so its Raft timers) at
// rate 2 to 3, far beyond the drift bound, lets the leader renew its lease
// on their fast promises, and then takes the leader away from them, by a
// pause (SIGSTOP) or by cutting it off: the followers elect a new leader
// while, by real time, the old leader's lease still runs. It needs
// --unsafe-clock, and the checkers must see the overlap. Raft keeps the
// heartbeat timeout at least the leader lease timeout, so the followers'
// timers run fully fast only with a --leader-lease-timeout of at most
// --heartbeat-timeout / 3.
type fastFollowers struct {
	cut  Failpoint // in force, nil when none
	fast []*proccluster.Node
}

func (f *fastFollowers) Name() string { return "clock-fast-followers" }

func (f *fastFollowers) Available(ctx context.Context, env *Env) error {
	if !env.UnsafeClock {
		return errors.New("clock faults beyond the drift bound need --unsafe-clock")
	}
	return clockAvailable(ctx, env)
}

func (f *fastFollowers) Inject(ctx context.Context, env *Env, rng *rand.Rand) (what string, err error) {
	defer func() {
		if err != nil {
			_ = f.Heal(context.WithoutCancel(ctx), env) // leave no follower fast; the injection error is the one to report
		}
	}()
	leader, followers := leaderAndFollowers(ctx, env, rng)
	if leader == nil {
		return "", errors.New("no leader")
	}
	rate := 2 + rng.Float64()
	for _, n := range followers {
		if !n.Alive() || n.Paused() {
			continue
		}
		f.fast = append(f.fast, n)
		if err := setRate(ctx, n, rate); err != nil {
			return "", err
		}
	}
	// A few lease rounds on the fast promises.
	hb := env.HeartbeatTimeout
	if hb == 0 {
		hb = lease.DefaultConfig().HeartbeatTimeout
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(hb):
	}
	var cut Failpoint = &pause{leader: true}
	if rng.IntN(2) == 0 {
		cut = &partition{kind: "leader"}
	}
	what, err = cut.Inject(ctx, env, rng)
	if err != nil {
		return "", err
	}
	f.cut = cut
	return fmt.Sprintf("followers %s at rate %.2f, then %s", ids(f.fast), rate, what), nil
}

func (f *fastFollowers) Heal(ctx context.Context, env *Env) error {
	var errs []error
	if f.cut != nil {
		errs = append(errs, f.cut.Heal(ctx, env))
		f.cut = nil
	}
	for _, n := range f.fast {
		if n.Alive() && !n.Paused() {
			errs = append(errs, setRate(ctx, n, 1))
		}
	}
	f.fast = nil
	return errors.Join(errs...)
}

func (f *fastFollowers) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, 3*time.Second)
}
