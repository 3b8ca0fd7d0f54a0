package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// delay makes messages late instead of losing them: a delay rule on a
// node's transport (POST /v1/debug/faults, rule "delay") holds every byte
// between the node and one peer, in one direction or both, for a fixed
// time and then delivers it, in order. Late answers are what a lease
// computed from the start of a confirmation round can miscount, and what
// a TCP retransmission or a slow scheduler produces on a real network.
//
// tc netem would delay real packets on the nodes' loopback addresses, but
// the kernels the harness has run on so far have no netem qdisc (this
// one: CONFIG_NET_SCH_NETEM is not set), so delays exist only in lockd's
// own transport hook (internal/mux's fault rules), like the hooks'
// partitions; each delay's description says so.
//
// Kinds:
//
//   - delay-leader: the leader's messages to one or every follower, or
//     theirs to it, or both, are late by 100-600 ms;
//   - delay-node: the same around any node, leader or follower.
type delay struct {
	leader bool
}

// Delays are drawn from this range: long enough to outlast a heartbeat
// round trip many times over, and at most a little over a HeartbeatTimeout
// of lockd's defaults, so that some delays cost the leader its followers
// and some do not.
const minDelay, maxDelay = 100 * time.Millisecond, 600 * time.Millisecond

func (d *delay) Name() string {
	if d.leader {
		return "delay-leader"
	}
	return "delay-node"
}

func (d *delay) Available(ctx context.Context, env *Env) error { return delayAvailable(ctx, env) }

// delayAvailable reports whether the nodes take delay rules: it sets a 1 ms
// delay on one running node against another and removes it at once.
func delayAvailable(ctx context.Context, env *Env) error {
	for _, n := range env.Cluster.Nodes {
		if !n.Alive() || n.Paused() {
			continue
		}
		for _, p := range env.Cluster.Nodes {
			if p == n {
				continue
			}
			if err := n.SetDelay(ctx, p.ID, "in", time.Millisecond); err != nil {
				return fmt.Errorf("the nodes take no delay rule: %w", err)
			}
			return n.HealPeer(ctx, p.ID)
		}
	}
	return errors.New("no running node")
}

func (d *delay) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	leader := env.Cluster.Leader(ctx)
	on := randomNode(env, rng, nil)
	if d.leader && leader != nil {
		on = leader
	}
	if on == nil {
		return "", errors.New("no running node")
	}
	peers := env.Cluster.Nodes[:0:0]
	for _, n := range env.Cluster.Nodes {
		if n != on {
			peers = append(peers, n)
		}
	}
	if rng.IntN(2) == 0 {
		i := rng.IntN(len(peers))
		peers = peers[i : i+1]
	}
	dir := []string{"in", "out", "both"}[rng.IntN(3)]
	late := between(rng, minDelay, maxDelay).Round(time.Millisecond)
	for _, p := range peers {
		if err := on.SetDelay(ctx, p.ID, dir, late); err != nil {
			return "", fmt.Errorf("delay on %s against %s: %w", on.ID, p.ID, err)
		}
	}
	role := "node"
	if on == leader {
		role = "leader"
	}
	way := map[string]string{"in": "from", "out": "to", "both": "to and from"}[dir]
	return fmt.Sprintf("%s %s: messages %s %s %v late (%s; in lockd's transport hook, internal/mux: no netem on this kernel)",
		role, on.ID, way, ids(peers), late, dir), nil
}

func (d *delay) Heal(ctx context.Context, env *Env) error {
	return (&partition{}).Heal(ctx, env)
}

func (d *delay) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+3*time.Second)
}
