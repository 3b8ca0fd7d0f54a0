package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/proccluster"
)

// killVoter kills a voter with SIGKILL for good, in a cluster that keeps
// its voter set (--voters, non-voters standing by: jepsen --non-voters):
// the leader is to promote a non-voter in its place once it has been
// unreachable for --dead-voter-after, and then remove it. The victim is
// the leader one time in three. At the heal, once the victim is out of
// the configuration, its machine is replaced as an operator would: its
// data is deleted and it joins again, empty, as a new non-voter, so that
// later faults find spares again. Nodes that were removed while they were
// down or cut off by other faults are rejoined the same way. A victim
// healed before --dead-voter-after, or never replaced (no caught-up
// non-voter), is restarted on its data, like kill.
type killVoter struct {
	victim *proccluster.Node
	at     time.Time // when it was killed
}

func (k *killVoter) Name() string { return "kill-voter" }

func (k *killVoter) Available(ctx context.Context, env *Env) error {
	if env.DeadVoterAfter <= 0 {
		return errors.New("the cluster does not keep its voter set: run with --non-voters")
	}
	return raftLeader(ctx, env, "no voters to replace")
}

func (k *killVoter) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return "", errors.New("no leader")
	}
	ms, err := leader.Members(ctx)
	if err != nil {
		return "", err
	}
	var followers []*proccluster.Node
	nonVoters := 0
	for _, m := range ms {
		n := env.Cluster.Node(m.ID)
		switch {
		case n == nil:
		case !m.Voter:
			nonVoters++
		case n != leader && n.Alive():
			followers = append(followers, n)
		}
	}
	if nonVoters == 0 {
		return "", errors.New("no non-voter stands by to replace a voter")
	}
	v := leader
	if rng.IntN(3) != 0 && len(followers) > 0 {
		v = followers[rng.IntN(len(followers))]
	}
	k.victim, k.at = v, time.Now()
	v.Kill()
	what := "kill -9 voter " + v.ID + " for good"
	if v == leader {
		what = "kill -9 the leader " + v.ID + " for good"
	}
	return what, nil
}

// Heal restarts the victim on its data if it was down for less than
// --dead-voter-after (it is a voter still: the hysteresis keeps it).
// Otherwise it waits for the victim to be out of the configuration, then
// brings its machine back as a new non-voter (or restarts it on its data
// if it is never replaced), and rejoins every other node that is no
// member any more.
func (k *killVoter) Heal(ctx context.Context, env *Env) error {
	v := k.victim
	if v == nil {
		return nil
	}
	if time.Since(k.at) < env.DeadVoterAfter {
		k.victim = nil
		return v.Start(env.Binary)
	}
	var ms []api.Member
	for {
		leader := env.Cluster.Leader(ctx)
		if leader != nil {
			var err error
			if ms, err = leader.Members(ctx); err == nil && !hasMember(ms, v.ID) {
				break
			}
		}
		if !wait(ctx, 200*time.Millisecond) {
			// Not replaced (no caught-up non-voter, or no quorum to
			// change the configuration): it is a voter still.
			k.victim = nil
			return v.Start(env.Binary)
		}
	}
	k.victim = nil
	strays := []*proccluster.Node{v}
	for _, n := range env.Cluster.Nodes {
		if n != v && !n.Paused() && !hasMember(ms, n.ID) {
			strays = append(strays, n)
		}
	}
	for _, n := range strays {
		if err := rejoinAsNonVoter(ctx, env, n); err != nil {
			return err
		}
	}
	return nil
}

// rejoinAsNonVoter deletes n's data and starts it as a new non-voter
// through a running member, and waits until the leader lists it.
func rejoinAsNonVoter(ctx context.Context, env *Env, n *proccluster.Node) error {
	if err := n.Wipe(); err != nil {
		return err
	}
	via := anyOtherRunning(env, n)
	if via == nil {
		return errors.New("no running node to join through")
	}
	if err := n.StartJoinNonVoter(env.Binary, via.HTTP); err != nil {
		return err
	}
	for {
		if leader := env.Cluster.Leader(ctx); leader != nil {
			if ms, err := leader.Members(ctx); err == nil && hasMember(ms, n.ID) {
				return nil
			}
		}
		if !wait(ctx, 200*time.Millisecond) {
			return fmt.Errorf("%s did not join again as a non-voter", n.ID)
		}
	}
}

func hasMember(ms []api.Member, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Pending reports whether the last victim is not back yet (its heal
// failed); the schedule heals again before it returns.
func (k *killVoter) Pending() bool { return k.victim != nil }

// Hold lets the leader see the victim dead for --dead-voter-after and
// replace it, most of the time; a short hold leaves it in the
// configuration, and the heal then restarts it like kill.
func (k *killVoter) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, env.DeadVoterAfter/2, env.DeadVoterAfter+4*time.Second)
}
