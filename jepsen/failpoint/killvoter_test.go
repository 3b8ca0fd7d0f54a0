package failpoint

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/test/proccluster"
)

// TestFaultKillVoter measures kill-voter on 3 voters and 2 non-voters
// with --voters 3: the victim dies, the leader replaces it with a
// non-voter and removes it, and after the heal the victim is back as a
// non-voter (a new machine), with 3 voters and 5 members again.
func TestFaultKillVoter(t *testing.T) {
	liveEnv(t) // builds lockd (and skips under -short)
	t.Parallel()
	const after = 2 * time.Second
	c, err := proccluster.New(proccluster.Config{Binary: lockdBin, Nodes: 5, Voters: 3, NonVoters: 2,
		KeepVoters: 3, DeadVoterAfter: after, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.WaitLeader(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	env := &Env{Cluster: c, Binary: lockdBin, Rec: history.NewRecorder(), TTL: 2 * time.Second, DeadVoterAfter: after}
	roles := func() (voters, nonVoters string) {
		l := c.Leader(ctx)
		if l == nil {
			return "no leader", ""
		}
		ms, err := l.Members(ctx)
		if err != nil {
			return err.Error(), ""
		}
		var v, n []string
		for _, m := range ms {
			if m.Voter {
				v = append(v, m.ID)
			} else {
				n = append(n, m.ID)
			}
		}
		slices.Sort(v)
		slices.Sort(n)
		return strings.Join(v, ","), strings.Join(n, ",")
	}
	waitFor(t, 20*time.Second, "3 voters, 2 non-voters", func() bool {
		v, n := roles()
		return v == "n1,n2,n3" && n == "n4,n5"
	})
	k := Registry()["kill-voter"].(*killVoter)
	if err := k.Available(ctx, env); err != nil {
		t.Fatal(err)
	}
	what, err := k.Inject(ctx, env, seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	v := k.victim
	t.Logf("inject: %s", what)
	defer func() { _ = k.Heal(ctx, env) }() // the test has checked what it checks; a failed heal only leaves a node down
	if v.Alive() {
		t.Fatalf("%s still runs", v.ID)
	}
	waitFor(t, 20*time.Second, v.ID+" replaced by a non-voter", func() bool {
		vs, ns := roles()
		return strings.Count(vs, ",") == 2 && !strings.Contains(vs+","+ns, v.ID) && strings.Count(ns, ",") == 0 && ns != ""
	})
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := k.Heal(hctx, env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, v.ID+" back as a non-voter", func() bool {
		vs, ns := roles()
		return strings.Count(vs, ",") == 2 && strings.Contains(","+ns+",", ","+v.ID+",") && strings.Count(ns, ",") == 1
	})
	vs, ns := roles()
	t.Logf("after the heal: voters %s, non-voters %s", vs, ns)
}
