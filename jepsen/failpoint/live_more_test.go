package failpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/proccluster"
)

// threadStates returns the state letter of every thread of pid from
// /proc (nil if the process is gone).
func threadStates(pid int) []string {
	stats, _ := filepath.Glob(filepath.Join("/proc", itoa(pid), "task", "*", "stat"))
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm may hold spaces, so cut after the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			out = append(out, s[i+2:i+3])
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// responds reports whether n answers GET /v1/cluster within 300 ms.
func responds(n *proccluster.Node) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := n.Status(ctx)
	return err == nil
}

// TestFaultPause measures pause-node and pause-leader: every thread of the
// victim's process is stopped (T in /proc/PID/task/*/stat) and it answers
// nothing; after the heal its threads run again, it answers, and it
// catches up.
func TestFaultPause(t *testing.T) {
	for _, name := range []string{"pause-node", "pause-leader"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := liveEnv(t)
			ctx := context.Background()
			p := Registry()[name].(*pause)
			leader := leaderAmong(t, 10*time.Second, env.Cluster.Nodes...)
			what, err := p.Inject(ctx, env, seeded(2))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("inject: %s", what)
			v := p.victim
			defer func() { _ = v.Resume() }()
			if name == "pause-leader" && v != leader {
				t.Fatalf("paused %s, the leader is %s", v.ID, leader.ID)
			}
			pid := v.PID()
			waitFor(t, 2*time.Second, "every thread of "+v.ID+" stopped", func() bool {
				st := threadStates(pid)
				for _, s := range st {
					if s != "T" {
						return false
					}
				}
				return len(st) > 0
			})
			t.Logf("%s (pid %d): %d threads, all stopped", v.ID, pid, len(threadStates(pid)))
			if responds(v) {
				t.Fatalf("paused %s answered", v.ID)
			}
			commitsThrough(t, 1, without(env.Cluster.Nodes, v)...)
			if err := p.Heal(ctx, env); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 2*time.Second, v.ID+"'s threads running again", func() bool {
				for _, s := range threadStates(pid) {
					if s == "T" {
						return false
					}
				}
				return true
			})
			if !responds(v) {
				t.Fatalf("%s does not answer after the heal", v.ID)
			}
			converges(t, env)
		})
	}
}

// TestFaultKill measures kill-node and kill-leader: the victim's process
// is gone and it answers nothing; after the heal a new process runs on
// its data and catches up.
func TestFaultKill(t *testing.T) {
	for _, name := range []string{"kill-node", "kill-leader"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := liveEnv(t)
			ctx := context.Background()
			k := Registry()[name].(*kill)
			leader := leaderAmong(t, 10*time.Second, env.Cluster.Nodes...)
			v := leader
			if name == "kill-node" {
				v = nil
			}
			var pids = map[*proccluster.Node]int{}
			for _, n := range env.Cluster.Nodes {
				pids[n] = n.PID()
			}
			what, err := k.Inject(ctx, env, seeded(4))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("inject: %s", what)
			if v != nil && k.victim != v {
				t.Fatalf("killed %s, the leader is %s", k.victim.ID, v.ID)
			}
			v = k.victim
			old := pids[v]
			if _, err := os.Stat(filepath.Join("/proc", itoa(old))); err == nil {
				t.Fatalf("%s's process %d still exists", v.ID, old)
			}
			if responds(v) {
				t.Fatalf("killed %s answered", v.ID)
			}
			commitsThrough(t, 1, without(env.Cluster.Nodes, v)...)
			if err := k.Heal(ctx, env); err != nil {
				t.Fatal(err)
			}
			if pid := v.PID(); pid == 0 || pid == old {
				t.Fatalf("%s after the heal: pid %d (was %d)", v.ID, pid, old)
			}
			waitFor(t, 10*time.Second, v.ID+" to answer after its restart", func() bool { return responds(v) })
			converges(t, env)
		})
	}
}

// delayedOn returns the node that has delay rules in force and its rules.
func delayedOn(t *testing.T, env *Env) (*proccluster.Node, map[string]api.FaultRules) {
	t.Helper()
	for _, n := range env.Cluster.Nodes {
		if r := faultRules(t, n); len(r) > 0 {
			return n, r
		}
	}
	t.Fatal("no node has delay rules")
	return nil, nil
}

// TestFaultDelay measures delay-leader and delay-node. delay-leader, drawn
// until every follower's link is delayed, and briefly enough that the
// leader does not lose its followers: a write through the leader,
// which needs a follower's answer, takes at least the delay. delay-node,
// drawn until a follower's messages from the leader are delayed: an entry
// the leader commits reaches that follower at least the delay after the
// write began. After the heal everything flows again.
func TestFaultDelay(t *testing.T) {
	for _, name := range []string{"delay-leader", "delay-node"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := liveEnv(t)
			ctx := context.Background()
			d := Registry()[name].(*delay)
			leader := leaderAmong(t, 10*time.Second, env.Cluster.Nodes...)
			var on *proccluster.Node
			var late time.Duration
			for seed := uint64(1); ; seed++ {
				if seed > 200 {
					t.Fatal("no seed draws the wanted delay")
				}
				what, err := d.Inject(ctx, env, seeded(seed))
				if err != nil {
					t.Fatal(err)
				}
				n, rules := delayedOn(t, env)
				want := false
				if name == "delay-leader" && n == leader && len(rules) == len(env.Cluster.Nodes)-1 {
					// Short enough that the leader keeps its followers.
					for _, r := range rules {
						late = max(r.InDelay.D(), r.OutDelay.D())
						want = r.InDelay.D()+r.OutDelay.D() <= 200*time.Millisecond
					}
				}
				if r, ok := rules[leader.ID]; name == "delay-node" && n != leader && ok && r.In == "delay" {
					want, late = true, r.InDelay.D()
				}
				if want {
					t.Logf("inject: %s", what)
					on = n
					break
				}
				if err := d.Heal(ctx, env); err != nil {
					t.Fatal(err)
				}
			}
			healed := false
			defer func() {
				if !healed {
					_ = d.Heal(ctx, env)
				}
			}()
			start := time.Now()
			if err := write(leader); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if name == "delay-leader" {
				if took < late {
					t.Fatalf("a write through the delayed leader took %v, less than the delay %v", took, late)
				}
				t.Logf("a write through the delayed leader took %v (delay %v)", took, late)
			} else {
				i := status(leader).CommitIndex
				waitFor(t, 5*time.Second, on.ID+" to receive the entry", func() bool { return status(on).LastLogIndex >= i })
				if got := time.Since(start); got < late {
					t.Fatalf("entry %d reached delayed %s %v after the write began, less than the delay %v", i, on.ID, got, late)
				} else {
					t.Logf("entry %d reached delayed %s %v after the write began (delay %v)", i, on.ID, got, late)
				}
			}
			if err := d.Heal(ctx, env); err != nil {
				t.Fatal(err)
			}
			healed = true
			converges(t, env)
		})
	}
}

// TestFaultWallStep measures wall-step: the victim's clock reports the
// step (hours), while its timers do not see it: no election happens, the
// leader keeps its master lease, and that lease's remaining time stays
// within a heartbeat timeout. The heal steps the clock back.
func TestFaultWallStep(t *testing.T) {
	env := liveEnv(t)
	t.Parallel()
	ctx := context.Background()
	w := Registry()["wall-step"].(*wallStep)
	if err := w.Available(ctx, env); err != nil {
		t.Skip(err)
	}
	leader := leaderAmong(t, 10*time.Second, env.Cluster.Nodes...)
	term := status(leader).Term
	what, err := w.Inject(ctx, env, seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inject: %s", what)
	v := w.victim
	defer func() { _ = w.Heal(ctx, env) }()
	c, err := v.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	step, err := time.ParseDuration(*c.WallStep)
	if err != nil || step.Abs() < minWallStep {
		t.Fatalf("%s's clock shows wall_step %q, want a step of at least %v", v.ID, *c.WallStep, minWallStep)
	}
	if !holdsFor(1500*time.Millisecond, func() bool {
		st := status(leader)
		lease := st.MasterLeaseRemaining
		return st.State == "Leader" && st.Term == term && lease != nil && lease.D() > 0 && lease.D() <= time.Second &&
			status(v).Term == term
	}) {
		t.Fatalf("after the wall step of %s by %v: leader %s %+v, %s in term %d (was term %d)", v.ID, step, leader.ID,
			status(leader), v.ID, status(v).Term, term)
	}
	if err := w.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if c, err := v.Clock(ctx); err != nil || *c.WallStep != "0s" {
		t.Fatalf("after the heal %s's wall_step is %v (%v)", v.ID, c.WallStep, err)
	}
}

// TestFaultMembership measures membership: the leader's member list loses
// the victim, and after the heal it is the list from before again, every
// member a voter, and every node catches up.
func TestFaultMembership(t *testing.T) {
	env := liveEnv(t)
	t.Parallel()
	ctx := context.Background()
	m := Registry()["membership"].(*membership)
	if err := m.Available(ctx, env); err != nil {
		t.Fatal(err)
	}
	voters := func() string {
		l := env.Cluster.Leader(ctx)
		if l == nil {
			return "no leader"
		}
		ms, err := l.Members(ctx)
		if err != nil {
			return err.Error()
		}
		var s []string
		for _, x := range ms {
			if x.Voter {
				s = append(s, x.ID)
			}
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	before := voters()
	what, err := m.Inject(ctx, env, seeded(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inject: %s; voters before: %s", what, before)
	v := m.victim
	defer func() { _ = m.Heal(ctx, env) }()
	waitFor(t, 10*time.Second, "the voters to lose "+v.ID, func() bool {
		s := voters()
		return s != before && !strings.Contains(","+s+",", ","+v.ID+",") && !strings.HasPrefix(s, "no ")
	})
	t.Logf("voters during the fault: %s", voters())
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.Heal(hctx, env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the voters to be "+before+" again", func() bool { return voters() == before })
	converges(t, env)
}
