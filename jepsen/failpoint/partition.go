package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// partition cuts links between nodes, through their transport fault hooks
// (POST /v1/debug/faults), or, with filter set, with real packet drops
// between the nodes' loopback addresses (iptables; see filter.go). Kinds:
//
//   - leader: the leader loses every link;
//   - node: one follower loses every link;
//   - split: a random minority is cut from the majority;
//   - bridge: two halves that cannot reach each other, and one node both
//     halves reach;
//   - oneway: the leader's messages to the others (or theirs to it) are
//     lost in one direction only, while the other direction passes (with
//     iptables, only the data packets of that direction are dropped, see
//     filter.go).
type partition struct {
	kind   string
	filter bool
	// dir fixes a oneway cut's direction ("in" or "out"); empty: drawn.
	dir   string
	chain *chain // the filter's rules in force, nil when none
	// cut is the last Inject's links.
	cut []link
}

func (p *partition) Name() string {
	if p.filter {
		return "iptables-" + p.kind
	}
	return "partition-" + p.kind
}

func (p *partition) Available(ctx context.Context, env *Env) error {
	if p.filter {
		return filterAvailable(env)
	}
	for _, n := range env.Cluster.Nodes {
		if !n.Alive() {
			continue
		}
		var out any
		return n.Do(ctx, "GET", "/v1/debug/faults", nil, &out)
	}
	return errors.New("no running node")
}

// link is one rule: on node, against peer, in direction.
type link struct {
	on, peer  *proccluster.Node
	direction string
}

func (p *partition) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	nodes := env.Cluster.Nodes
	perm := rng.Perm(len(nodes))
	shuffled := make([]*proccluster.Node, len(nodes))
	for i, j := range perm {
		shuffled[i] = nodes[j]
	}
	leader := leaderOrAny(ctx, env, rng)
	if leader == nil {
		return "", errors.New("no running node")
	}
	others := func(x *proccluster.Node) []*proccluster.Node {
		var o []*proccluster.Node
		for _, n := range nodes {
			if n != x {
				o = append(o, n)
			}
		}
		return o
	}
	var links []link
	cut := func(a, b []*proccluster.Node) {
		for _, x := range a {
			for _, y := range b {
				links = append(links, link{x, y, "both"}, link{y, x, "both"})
			}
		}
	}
	var what string
	switch p.kind {
	case "leader":
		cut([]*proccluster.Node{leader}, others(leader))
		what = "isolate leader " + leader.ID
	case "node":
		v := randomNode(env, rng, leader)
		if v == nil {
			v = leader
		}
		cut([]*proccluster.Node{v}, others(v))
		what = "isolate " + v.ID
	case "split":
		k := (len(nodes) - 1) / 2
		cut(shuffled[:k], shuffled[k:])
		what = fmt.Sprintf("split %s | %s", ids(shuffled[:k]), ids(shuffled[k:]))
	case "bridge":
		k := (len(nodes) - 1) / 2
		a, bridge, b := shuffled[:k], shuffled[k], shuffled[k+1:]
		cut(a, b)
		what = fmt.Sprintf("bridge %s - %s - %s", ids(a), bridge.ID, ids(b))
	case "oneway":
		dir := "out"
		if rng.IntN(2) == 0 {
			dir = "in"
		}
		if p.dir != "" {
			dir = p.dir
		}
		for _, o := range others(leader) {
			links = append(links, link{leader, o, dir})
		}
		what = fmt.Sprintf("leader %s drops every %sbound message", leader.ID, dir)
	}
	rule := "drop"
	if rng.IntN(2) == 0 {
		rule = "blackhole"
	}
	p.cut = links
	if p.filter {
		c, err := newChain(ctx, links, rule, p.kind == "oneway")
		if err != nil {
			return "", err
		}
		p.chain = c
		return what + " (iptables " + rule + ")", nil
	}
	for _, l := range links {
		if !l.on.Alive() || l.on.Paused() {
			continue
		}
		if err := l.on.SetFault(ctx, l.peer.ID, l.direction, rule); err != nil {
			return "", fmt.Errorf("rule on %s against %s: %w", l.on.ID, l.peer.ID, err)
		}
	}
	return what + " (" + rule + ")", nil
}

func (p *partition) Heal(ctx context.Context, env *Env) error {
	if p.filter {
		err := p.chain.remove(ctx)
		p.chain = nil
		return err
	}
	var errs []error
	for _, n := range env.Cluster.Nodes {
		if n.Alive() && !n.Paused() {
			errs = append(errs, n.HealFaults(ctx))
		}
	}
	return errors.Join(errs...)
}

func (p *partition) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, 500*time.Millisecond, env.TTL+3*time.Second)
}

func ids(ns []*proccluster.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.ID)
	}
	return "{" + strings.Join(s, ",") + "}"
}
