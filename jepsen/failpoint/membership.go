package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// membership removes a node from the cluster through the API and adds it
// back at the heal. The node is the leader one time in four (a leader that
// removes itself gives up its master lease and steps down), else a
// follower. Half of the time the node also loses its disk: it is killed
// and its data directory deleted, and at the heal it starts empty with
// --join, as an operator replaces a dead machine. Otherwise the heal adds
// it back through the API and restarts it on its data (a removed node
// exits, and answers 410 removed when restarted until it is added back). Raft mode only (the classic modes' membership
// is static).
type membership struct {
	victim   *proccluster.Node
	wiped    bool
	nonVoter bool // the victim was a non-voter: it comes back as one
}

func (m *membership) Name() string { return "membership" }

func (m *membership) Available(ctx context.Context, env *Env) error {
	return raftLeader(ctx, env, "membership is static")
}

// raftLeader is the precondition of the faults that change the voter set:
// a leader that runs in Raft mode. Otherwise it says why not: no leader
// now, or what the classic modes lack.
func raftLeader(ctx context.Context, env *Env, classicLacks string) error {
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return errors.New("no leader")
	}
	st, err := leader.Status(ctx)
	if err != nil {
		return err
	}
	if st.Mode != "raft" {
		return fmt.Errorf("%s in %s mode", classicLacks, st.Mode)
	}
	return nil
}

func (m *membership) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	if m.victim != nil {
		// The last heal failed: removing another node could leave the
		// cluster without a quorum. The schedule heals again now.
		return "", fmt.Errorf("%s is not back in the cluster yet", m.victim.ID)
	}
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return "", errors.New("no leader")
	}
	v := leader
	if rng.IntN(4) != 0 {
		if f := randomNode(env, rng, leader); f != nil {
			v = f
		}
	}
	wipe := rng.IntN(2) == 0
	// Set before the call: a removal can take effect and still answer an
	// error (a leader removing itself steps down), and Heal must add the
	// node back either way.
	m.victim, m.wiped = v, false
	voter, err := isVoter(ctx, leader, v.ID)
	if err != nil {
		m.victim = nil
		return "", err
	}
	m.nonVoter = !voter
	if err := leader.RemoveMember(ctx, v.ID); err != nil {
		return "", fmt.Errorf("remove %s: %w", v.ID, err)
	}
	what := "remove " + v.ID
	if v == leader {
		what = "remove leader " + v.ID
	}
	if wipe {
		if err := v.Wipe(); err != nil {
			return "", err
		}
		m.wiped = true
		what += ", kill -9 it and delete its data"
	}
	return what, nil
}

// Heal adds the node back in the role it had: a wiped node by starting it
// with --join (and --non-voter for a non-voter), a running one through
// the API. It retries until the node is a member again or ctx ends.
func (m *membership) Heal(ctx context.Context, env *Env) error {
	v := m.victim
	if v == nil {
		return nil
	}
	if m.wiped {
		via := anyOtherRunning(env, v)
		if via == nil {
			return errors.New("no running node to join through")
		}
		start := v.StartJoin
		if m.nonVoter {
			start = v.StartJoinNonVoter
		}
		if err := start(env.Binary, via.HTTP); err != nil {
			return err
		}
	} else if leader := env.Cluster.Leader(ctx); leader != nil {
		if ok, err := isMember(ctx, leader, v.ID); err == nil && ok {
			m.victim = nil // the removal never took effect
			return nil
		}
		if err := v.Restart(env.Binary); err != nil {
			return err
		}
	} else if err := v.Restart(env.Binary); err != nil {
		return err
	}
	for {
		err := m.readd(ctx, env, v)
		if err == nil {
			m.victim = nil
			return nil
		}
		if !wait(ctx, 200*time.Millisecond) {
			return fmt.Errorf("%s is not a member again: %w", v.ID, err)
		}
	}
}

// readd returns nil once the leader names v a member (in the role it
// had, unless the leader's voter-set maintenance changed it since), and
// otherwise asks it to add v (unless v joins by itself).
func (m *membership) readd(ctx context.Context, env *Env, v *proccluster.Node) error {
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return errors.New("no leader")
	}
	ok, err := isMember(ctx, leader, v.ID)
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	case m.wiped:
		return errors.New("not joined yet")
	}
	add := leader.AddMember
	if m.nonVoter {
		add = leader.AddNonVoter
	}
	if err := add(ctx, v); err != nil {
		return err
	}
	return errors.New("added, not seen yet")
}

// Pending reports whether a node removed by the last Inject is not back
// yet (its heal failed); the schedule heals again before it returns.
func (m *membership) Pending() bool { return m.victim != nil }

func (m *membership) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+3*time.Second)
}

// isVoter reports whether the node n names id a voter.
func isVoter(ctx context.Context, n *proccluster.Node, id string) (bool, error) {
	ms, err := n.Members(ctx)
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.ID == id && m.Voter {
			return true, nil
		}
	}
	return false, nil
}

// isMember reports whether the node n names id a member, voter or not.
func isMember(ctx context.Context, n *proccluster.Node, id string) (bool, error) {
	ms, err := n.Members(ctx)
	if err != nil {
		return false, err
	}
	return hasMember(ms, id), nil
}

// anyOtherRunning returns a running, unpaused node other than x, or nil.
func anyOtherRunning(env *Env, x *proccluster.Node) *proccluster.Node {
	for _, n := range env.Cluster.Nodes {
		if n != x && n.Alive() && !n.Paused() {
			return n
		}
	}
	return nil
}
