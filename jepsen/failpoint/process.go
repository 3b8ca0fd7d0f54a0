package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
)

// kill sends SIGKILL to a node (or the leader) and restarts it on heal.
type kill struct {
	leader bool
	victim *proccluster.Node
}

func (k *kill) Name() string {
	if k.leader {
		return "kill-leader"
	}
	return "kill-node"
}

func (k *kill) Available(context.Context, *Env) error { return nil }

func (k *kill) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	k.victim = randomNode(env, rng, nil)
	if k.leader {
		k.victim = leaderOrAny(ctx, env, rng)
	}
	if k.victim == nil {
		return "", errors.New("no running node")
	}
	k.victim.Kill()
	return "kill -9 " + k.victim.ID, nil
}

func (k *kill) Heal(_ context.Context, env *Env) error {
	if k.victim == nil {
		return nil
	}
	v := k.victim
	k.victim = nil
	return v.Start(env.Binary)
}

func (k *kill) Hold(_ *Env, rng *rand.Rand) time.Duration {
	return between(rng, 0, 4*time.Second)
}

// pause stops a node (or the leader) with SIGSTOP and continues it on heal.
type pause struct {
	leader bool
	victim *proccluster.Node
}

func (p *pause) Name() string {
	if p.leader {
		return "pause-leader"
	}
	return "pause-node"
}

func (p *pause) Available(context.Context, *Env) error { return nil }

func (p *pause) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	p.victim = randomNode(env, rng, nil)
	if p.leader {
		p.victim = leaderOrAny(ctx, env, rng)
	}
	if p.victim == nil {
		return "", errors.New("no running node")
	}
	if err := p.victim.Pause(); err != nil {
		return "", err
	}
	return "SIGSTOP " + p.victim.ID, nil
}

func (p *pause) Heal(context.Context, *Env) error {
	if p.victim == nil {
		return nil
	}
	v := p.victim
	p.victim = nil
	if !v.Alive() {
		return nil
	}
	return v.Resume()
}

// Hold sometimes outlasts the sessions' TTL, so that a paused leader wakes
// to find itself replaced and its clients' sessions possibly expired.
func (p *pause) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, 200*time.Millisecond, env.TTL+2*time.Second)
}

// pauseClient stops a child fence client that holds the fenced lock with
// SIGSTOP for longer than its session's TTL, so that the server expires
// the session and grants the lock to another while the child still
// believes it holds it.
type pauseClient struct {
	victim *traffic.Child
}

func (p *pauseClient) Name() string { return "pause-client" }

func (p *pauseClient) Available(_ context.Context, env *Env) error {
	if env.Resource == nil || len(env.Resource.Children()) == 0 {
		return errors.New("needs the fenced workload (child clients)")
	}
	return nil
}

func (p *pauseClient) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	kids := env.Resource.Children()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && p.victim == nil {
		for _, i := range rng.Perm(len(kids)) {
			if env.Resource.Holding(kids[i]) {
				p.victim = kids[i]
				break
			}
		}
		if p.victim == nil && !wait(ctx, 20*time.Millisecond) {
			break
		}
	}
	holding := "holding the lock"
	if p.victim == nil {
		p.victim, holding = kids[rng.IntN(len(kids))], "not known to hold the lock"
	}
	if err := p.victim.Pause(); err != nil {
		p.victim = nil
		return "", err
	}
	return fmt.Sprintf("SIGSTOP client %s (%s)", p.victim.Name, holding), nil
}

func (p *pauseClient) Heal(context.Context, *Env) error {
	if p.victim == nil {
		return nil
	}
	v := p.victim
	p.victim = nil
	return v.Resume()
}

// Hold is past the TTL, with time for the server to expire the session and
// for another client to take the lock and write.
func (p *pauseClient) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, 2*env.TTL, 2*env.TTL+3*time.Second)
}
