// Package failpoint is the harness's faults: killing, pausing and
// restarting lockd nodes, killing voters for good (the cluster replaces
// them with non-voters), pausing a lock-holding client, partitioning the
// network through the nodes' transport fault hooks or iptables, delaying
// messages between nodes, stepping a node's wall clock, skewing its whole
// clock, changing the membership, and two schedules aimed at the master
// lease. Each fault has a Name,
// says whether it is Available in this run, and can be Injected and then
// Healed. A Schedule, drawn from a seed, injects and heals them one at a
// time for a bounded time.
//
// Each fault does what its name says, measured on a live cluster by this
// package's tests (TestFault*): a partition lets no message across the cut
// (the cut node's commit index stays put while the majority commits), a
// one-way partition passes the other direction, pause stops every thread
// of the process, kill ends it, delay makes messages at least that late,
// wall-step moves only the wall clock, membership removes the node and
// adds it back, and everything flows again after the heal. A one-way cut
// with iptables drops only the data packets of its direction: dropping
// every packet of one direction stops TCP both ways (TestOneWayRules
// measures both rule sets on raw connections), so iptables-oneway would be
// another iptables-leader; see filter.go.
//
// Faults break things on purpose; they do not check anything.
package failpoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockd/lockd/internal/ctxsleep"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
)

// Env is what a fault acts on.
type Env struct {
	Cluster *proccluster.Cluster
	Binary  string
	Rec     *history.Recorder
	// Resource holds the child fence clients (nil without the fenced
	// workload).
	Resource *traffic.Resource
	// EtcdClient is the etcd workload's child (nil without it): paused,
	// as the fence clients are, by faults that need a quiet log.
	EtcdClient *traffic.Child
	// TTL is the TTL of the clients' sessions.
	TTL time.Duration
	// UnsafeClock allows the clock faults.
	UnsafeClock bool
	// Workloads are the run's workloads (traffic's names).
	Workloads []string
	// Writes holds the workers' writes back while a fault needs a quiet
	// log (nil: never held).
	Writes *traffic.Gate
	// ElectionTimeout is the nodes' Raft candidate timeout.
	ElectionTimeout time.Duration
	// HeartbeatTimeout is the nodes' Raft follower timeout.
	HeartbeatTimeout time.Duration
	// LeaderLeaseTimeout is the nodes' --leader-lease-timeout: a Raft
	// leader steps down when it has heard from no quorum for that long.
	LeaderLeaseTimeout time.Duration
	// MaxClockDrift is the nodes' --max-clock-drift; 0 for lockd's
	// default, negative for a bound of 0.
	MaxClockDrift float64
	// DeadVoterAfter is the nodes' --dead-voter-after when the cluster
	// keeps its voter set (--voters, with non-voters standing by); 0 when
	// it does not.
	DeadVoterAfter time.Duration
	// Clients is how the faults' own clients (late-answer's reader,
	// writer and load) reach a secured cluster: the lock workload's TLS
	// and token (traffic.LockAccess), since their reads are checked
	// against its sessions. The cluster's own calls (fault rules, clocks,
	// members) carry its admin token by themselves.
	Clients traffic.Access
}

// Failpoint is one kind of fault.
type Failpoint interface {
	// Name is the fault's name in flags and reports.
	Name() string
	// Available returns nil if the fault can run in env, else why not.
	Available(ctx context.Context, env *Env) error
	// Inject breaks something and returns a description of what.
	Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error)
	// Heal undoes the last Inject.
	Heal(ctx context.Context, env *Env) error
	// Hold is how long the fault stays in force, drawn from rng.
	Hold(env *Env, rng *rand.Rand) time.Duration
}

// Aimed is a fault aimed at a situation that its Inject arranges step by
// step and may miss (late-answer, lease-schedule): a cycle that missed it
// injected something, but not what the fault is for. Reached reports
// whether the last Inject reached it, and if not, why not.
type Aimed interface {
	Failpoint
	Reached() (ok bool, why string)
}

// AimOf returns f as an Aimed fault, looking through wrappers that name
// the fault they wrap (an Unwrap() Failpoint method).
func AimOf(f Failpoint) (Aimed, bool) {
	for f != nil {
		if a, ok := f.(Aimed); ok {
			return a, true
		}
		u, ok := f.(interface{ Unwrap() Failpoint })
		if !ok {
			return nil, false
		}
		f = u.Unwrap()
	}
	return nil, false
}

// Aim counts the cycles of one aimed fault in a run, and how many of them
// reached the situation the fault aims for.
type Aim struct {
	Cycles, Reached int
}

// String renders the count as "reached N of M cycles".
func (a Aim) String() string { return fmt.Sprintf("reached %d of %d cycles", a.Reached, a.Cycles) }

// Registry returns a fresh instance of every fault, by name.
func Registry() map[string]Failpoint {
	all := []Failpoint{
		&kill{leader: false}, &kill{leader: true},
		&pause{leader: false}, &pause{leader: true},
		&pauseClient{},
		&partition{kind: "leader"}, &partition{kind: "node"}, &partition{kind: "split"},
		&partition{kind: "bridge"}, &partition{kind: "oneway"},
		&partition{kind: "leader", filter: true}, &partition{kind: "node", filter: true},
		&partition{kind: "split", filter: true}, &partition{kind: "bridge", filter: true},
		&partition{kind: "oneway", filter: true},
		&clockFault{kind: "skew"}, &clockFault{kind: "rate"}, &clockFault{kind: "drift"}, &fastFollowers{},
		&leaseSchedule{}, &lateAnswer{},
		&delay{leader: true}, &delay{leader: false},
		&wallStep{},
		&membership{}, &killVoter{},
		&diskFull{},
	}
	m := map[string]Failpoint{}
	for _, f := range all {
		m[f.Name()] = f
	}
	return m
}

// notInAll are the faults "all" leaves out: disk-full runs every node on a
// small file system of its own with the bolt log store instead of the
// default WAL, which would change what every other fault runs against; it
// runs when named.
var notInAll = map[string]bool{"disk-full": true}

// Names returns every fault's name, sorted.
func Names() []string {
	var out []string
	for n := range Registry() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Select parses a comma-separated list of fault names ("all" for every
// fault but those outside All, "none" for none).
func Select(list string) ([]Failpoint, error) {
	reg := Registry()
	if list == "" || list == "none" {
		return nil, nil
	}
	if list == "all" {
		var out []Failpoint
		for _, n := range Names() {
			if !notInAll[n] {
				out = append(out, reg[n])
			}
		}
		return out, nil
	}
	var out []Failpoint
	for _, n := range strings.Split(list, ",") {
		f, ok := reg[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("failpoint: unknown fault %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// Schedule injects faults one at a time until its deadline: a quiet
// spell, a fault drawn from the seed, its hold, its heal, and a wait for
// the cluster to have a leader again.
type Schedule struct {
	Faults []Failpoint
	Seed   uint64
	// Quiet bounds the pause between faults.
	QuietMin, QuietMax time.Duration

	aims map[string]Aim
}

// Aims returns, per aimed fault that was injected, how many of its cycles
// reached their aim. Call it after Run.
func (s *Schedule) Aims() map[string]Aim {
	out := map[string]Aim{}
	for k, v := range s.aims {
		out[k] = v
	}
	return out
}

// Run runs the schedule until ctx ends. It returns how many faults it
// injected. Every fault it injects is healed before it returns, even when
// ctx ends during the hold.
func (s *Schedule) Run(ctx context.Context, env *Env) int {
	rng := rand.New(rand.NewPCG(s.Seed, 0xfa17))
	var avail []Failpoint
	for _, f := range s.Faults {
		if err := f.Available(ctx, env); err != nil {
			env.Rec.Eventf("fault %s unavailable: %v", f.Name(), err)
			continue
		}
		avail = append(avail, f)
	}
	n := 0
	for len(avail) > 0 {
		quiet := s.QuietMin + time.Duration(rng.Int64N(int64(s.QuietMax-s.QuietMin)+1))
		if !wait(ctx, quiet) {
			break
		}
		f := avail[rng.IntN(len(avail))]
		what, err := f.Inject(ctx, env, rng)
		// A cycle of an aimed fault that the run's end cut short is no
		// attempt at its aim: it is not counted.
		_, aimed := AimOf(f)
		cutShort := aimed && ctx.Err() != nil
		if err != nil {
			if aimed && !cutShort {
				s.count(f.Name(), false) // a cycle, and it missed
			}
			env.Rec.Eventf("inject %s failed: %v", f.Name(), err)
			heal(env, f)
			continue
		}
		n++
		if a, ok := AimOf(f); ok {
			reached, why := a.Reached()
			switch {
			case cutShort:
				what += "; cut short by the run's end: not counted toward its aim"
			case reached:
				s.count(f.Name(), true)
				what += "; aim reached"
			default:
				s.count(f.Name(), false)
				what += "; aim NOT reached: " + why
			}
		}
		env.Rec.Eventf("inject %s: %s", f.Name(), what)
		wait(ctx, f.Hold(env, rng))
		heal(env, f)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		if _, err := env.Cluster.WaitLeader(wctx, 15*time.Second); err != nil {
			env.Rec.Eventf("no leader 15s after healing %s", f.Name())
		}
		cancel()
	}
	for _, name := range slices.Sorted(maps.Keys(s.aims)) {
		env.Rec.Eventf("%s: %s", name, s.aims[name])
	}
	// A fault whose heal failed gets one more try before the final checks.
	for _, f := range avail {
		if p, ok := f.(interface{ Pending() bool }); ok && p.Pending() {
			heal(env, f)
		}
	}
	return n
}

// count counts one cycle of the aimed fault name.
func (s *Schedule) count(name string, reached bool) {
	if s.aims == nil {
		s.aims = map[string]Aim{}
	}
	a := s.aims[name]
	a.Cycles++
	if reached {
		a.Reached++
	}
	s.aims[name] = a
}

// heal heals f with a fresh bounded context, so a fault is undone even
// after the run's context ended.
func heal(env *Env, f Failpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.Heal(ctx, env); err != nil {
		env.Rec.Eventf("heal %s failed: %v", f.Name(), err)
		return
	}
	env.Rec.Eventf("heal %s", f.Name())
}

// HealAll removes every transport fault and resumes every paused node and
// client; the runner calls it before the final reads.
func HealAll(ctx context.Context, env *Env) error {
	env.Writes.Uncut()
	env.Writes.Open()
	var errs []error
	if filterAvailable(env) == nil {
		errs = append(errs, removeLeftoverChain(ctx))
	}
	for _, n := range env.Cluster.Nodes {
		if n.Paused() {
			errs = append(errs, n.Resume())
		}
		if n.Alive() {
			errs = append(errs, n.HealFaults(ctx))
		}
	}
	if env.Resource != nil {
		for _, c := range env.Resource.Children() {
			_ = c.Resume()
		}
	}
	if env.EtcdClient != nil {
		_ = env.EtcdClient.Resume()
	}
	return errors.Join(errs...)
}

// wait waits d or until ctx ends; it reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool { return ctxsleep.Sleep(ctx, d) == nil }

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// leaderOrAny returns the current leader, or a random running node when
// there is none.
func leaderOrAny(ctx context.Context, env *Env, rng *rand.Rand) *proccluster.Node {
	if l := env.Cluster.Leader(ctx); l != nil {
		return l
	}
	return randomNode(env, rng, nil)
}

// randomNode returns a random running, unpaused node other than except.
// leaderAndFollowers returns the current leader (nil if none) and every
// other node, in an order drawn from rng.
func leaderAndFollowers(ctx context.Context, env *Env, rng *rand.Rand) (*proccluster.Node, []*proccluster.Node) {
	leader := env.Cluster.Leader(ctx)
	if leader == nil {
		return nil, nil
	}
	var followers []*proccluster.Node
	for _, i := range rng.Perm(len(env.Cluster.Nodes)) {
		if n := env.Cluster.Nodes[i]; n != leader {
			followers = append(followers, n)
		}
	}
	return leader, followers
}

// leaderOrNode picks the leader half the time (when there is one) and a
// random running node otherwise, and names its role ("leader" or "node").
func leaderOrNode(ctx context.Context, env *Env, rng *rand.Rand) (*proccluster.Node, string) {
	leader := env.Cluster.Leader(ctx)
	v := randomNode(env, rng, nil)
	if rng.IntN(2) == 0 && leader != nil {
		v = leader
	}
	if v != nil && v == leader {
		return v, "leader"
	}
	return v, "node"
}

func randomNode(env *Env, rng *rand.Rand, except *proccluster.Node) *proccluster.Node {
	var c []*proccluster.Node
	for _, n := range env.Cluster.Nodes {
		if n != except && n.Alive() && !n.Paused() {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[rng.IntN(len(c))]
}
