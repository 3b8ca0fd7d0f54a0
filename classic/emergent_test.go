package classic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The emergent algorithm's properties, pinned in the simulator with 1000
// seeds each (100 with -short). Every run uses DefaultSimConfig: one-way
// delays of 1 to 10ms, DefaultTiming and DefaultPool (limits 3 and 5,
// slave heartbeats every 500ms counted for 1.5s, trigger times up to 1s,
// three missed master heartbeats).

// emSeeds is how many runs each property gets.
func emSeeds() uint64 {
	if testing.Short() {
		return 100
	}
	return seeds
}

// poolRecovery bounds how long the pool may stay out of its limits after
// one crash or restart: a dead slave is counted for up to SlaveTimeout,
// then the first idle node to act waits up to its trigger time; an
// overshoot is then undone by a slave that waits up to its own trigger
// time once the newcomer's heartbeat arrives; a restarted node listens
// for SlaveTimeout before it judges. Two of each, and half a second for
// delays and heartbeat phases.
func poolRecovery(p Pool) time.Duration {
	return 2*p.SlaveTimeout + 2*p.TriggerJitter + 500*time.Millisecond
}

// emRoles counts the running nodes of each role, reading the machines
// directly (Stats would allocate on every event).
func emRoles(s *Sim) (masters []string, pool int) {
	for _, id := range s.ids {
		n := s.nodes[id]
		if !n.up {
			continue
		}
		switch n.m.(*emergent).role {
		case RoleMaster:
			masters = append(masters, id)
		case RoleSlave, RoleCandidate:
			pool++
		}
	}
	return masters, pool
}

// sentTally adds up every incarnation's SentByRole: a node's Stats start
// again when it restarts, so they are read just before each crash and at
// the end.
type sentTally map[string]map[string]map[Kind]uint64 // node -> role -> kind

func (st sentTally) add(s Stats) {
	if st[s.Node] == nil {
		st[s.Node] = map[string]map[Kind]uint64{}
	}
	for role, kinds := range s.SentByRole {
		if st[s.Node][role] == nil {
			st[s.Node][role] = map[Kind]uint64{}
		}
		for k, n := range kinds {
			st[s.Node][role][k] += n
		}
	}
}

// check is property (b): no idle node (and no master) ever sent an
// election message; only slaves and candidates did, and idle nodes sent
// nothing at all. And the tally accounts for every message the Sim
// carried, so no message escaped it.
func (st sentTally) check(s *Sim) error {
	total := map[Kind]uint64{}
	for node, roles := range st {
		for role, kinds := range roles {
			for k, n := range kinds {
				total[k] += n
				switch {
				case role == "idle" && n > 0:
					return fmt.Errorf("%s sent %d %v while idle", node, n, k)
				case role == "master" && !k.heartbeat():
					return fmt.Errorf("%s sent %d %v while master", node, n, k)
				case !k.heartbeat() && role != "slave" && role != "candidate":
					return fmt.Errorf("%s sent %d %v as %s", node, n, k, role)
				}
			}
		}
	}
	if sent := s.Sent(); fmt.Sprint(sent) != fmt.Sprint(kindMapOf(total)) {
		return fmt.Errorf("by role %v, but the network carried %v", total, sent)
	}
	return nil
}

func kindMapOf(m map[Kind]uint64) map[Kind]uint64 {
	out := map[Kind]uint64{}
	for k, n := range m {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// churnRun is property (a). A cluster of 8 to 16 nodes runs with nN as
// master and the three highest below it as slaves. Then six churn events,
// R to R+2s apart (R = poolRecovery): each crashes a random running node
// other than the master (idle or slave) or restarts a crashed one, with
// at most three nodes down at a time, so that at least four non-master
// nodes can always fill the pool. The property: from R after each event
// until the next, and for 10s after the last, at every event the
// simulator handles, the number of running nodes that are slaves or
// candidates is within [Lower, Upper] and there is exactly one master,
// the same throughout.
func churnRun(seed uint64, tally sentTally) error {
	rng := rand.New(rand.NewPCG(seed, 21))
	n := 8 + rng.IntN(9)
	cfg := DefaultSimConfig(Emergent, n, seed)
	cfg.Coordinator = SimID(n)
	s, err := NewSim(cfg)
	if err != nil {
		return err
	}
	p, r := cfg.Pool, poolRecovery(cfg.Pool)
	var violation error
	holds := func() bool {
		if violation != nil {
			return true
		}
		masters, pool := emRoles(s)
		switch {
		case len(masters) != 1 || masters[0] != cfg.Coordinator:
			violation = fmt.Errorf("at %v: masters %v, want [%s]", s.Now(), masters, cfg.Coordinator)
		case pool < p.Lower || pool > p.Upper:
			violation = fmt.Errorf("at %v: %d slaves, want %d..%d", s.Now(), pool, p.Lower, p.Upper)
		}
		return violation != nil
	}
	watch := func(d time.Duration) error {
		s.RunUntil(holds, d)
		return violation
	}
	if err := watch(r); err != nil {
		return fmt.Errorf("N=%d, before any churn: %w", n, err)
	}
	var down []string
	for ev := range 6 {
		var what string
		if len(down) > 0 && (len(down) == 3 || rng.IntN(2) == 0) {
			i := rng.IntN(len(down))
			id := down[i]
			down = slices.Delete(down, i, i+1)
			s.Restart(id)
			what = "restart " + id
		} else {
			living := slices.DeleteFunc(s.Living(), func(id string) bool { return id == cfg.Coordinator })
			id := living[rng.IntN(len(living))]
			what = fmt.Sprintf("crash %s (%s)", id, s.Stats(id).Role)
			tally.add(s.Stats(id))
			s.Crash(id)
			down = append(down, id)
		}
		s.Run(r)
		gap := time.Duration(rng.Int64N(int64(2 * time.Second)))
		if ev == 5 {
			gap = 10 * time.Second
		}
		if err := watch(gap); err != nil {
			return fmt.Errorf("N=%d, event %d (%s): %w", n, ev+1, what, err)
		}
	}
	for _, id := range s.Living() {
		tally.add(s.Stats(id))
	}
	return tally.check(s)
}

// TestEmergent_PoolStaysWithinLimitsUnderChurn is property (a), and (b)
// over the same runs.
func TestEmergent_PoolStaysWithinLimitsUnderChurn(t *testing.T) {
	failed := 0
	for seed := uint64(1); seed <= emSeeds(); seed++ {
		if err := churnRun(seed, sentTally{}); err != nil {
			t.Errorf("seed %d: %v", seed, err)
			if failed++; failed == 5 {
				t.FailNow()
			}
		}
	}
}

// singleFailureRun is property (c). A cluster of 4 to 24 nodes either
// boots fresh (every node idle: the pool forms, then elects) or starts
// running with nN as master; once it has settled (Sim.Settled) and its
// pool is within the limits (and again after poolRecovery more), one node is crashed: the master, a slave or
// an idle node, by turns (a slave when there is no idle node). The
// property: within failoverBound the running nodes settle again with
// exactly one master, which every running node knows, and which is a
// former slave if the master was crashed and the same master otherwise;
// and for the next 5s there stays exactly one master, the same, and no
// election starts.
func singleFailureRun(seed uint64, tally sentTally) error {
	rng := rand.New(rand.NewPCG(seed, 23))
	n := 4 + rng.IntN(21)
	cfg := DefaultSimConfig(Emergent, n, seed)
	fresh := rng.IntN(2) == 0
	if !fresh {
		cfg.Coordinator = SimID(n)
	}
	s, err := NewSim(cfg)
	if err != nil {
		return err
	}
	p := cfg.Pool
	ready := func() bool {
		_, pool := emRoles(s)
		return s.Settled() && pool >= min(p.Lower, n-1) && pool <= p.Upper
	}
	if _, ok := s.RunUntil(ready, settleLimit); !ok {
		return fmt.Errorf("N=%d fresh=%v: never settled: %s", n, fresh, describe(s))
	}
	// Let any promotion already under way land, so that "slave" below
	// means a slave when the crash comes.
	s.Run(poolRecovery(p))
	if _, ok := s.RunUntil(ready, settleLimit); !ok {
		return fmt.Errorf("N=%d fresh=%v: did not settle again: %s", n, fresh, describe(s))
	}
	master := s.Coordinators()[0]
	var slaves, idle []string
	for _, id := range s.Living() {
		switch s.Stats(id).Role {
		case "slave":
			slaves = append(slaves, id)
		case "idle":
			idle = append(idle, id)
		}
	}
	var victim string
	switch {
	case seed%3 == 0:
		victim = master
	case seed%3 == 1 || len(idle) == 0:
		victim = slaves[rng.IntN(len(slaves))]
	default:
		victim = idle[rng.IntN(len(idle))]
	}
	tally.add(s.Stats(victim))
	s.Crash(victim)
	start := s.Now()
	if _, ok := s.Settle(failoverBound(cfg.Timing, p)); !ok {
		return fmt.Errorf("N=%d fresh=%v crash %s: not settled in %v: %s", n, fresh, victim, failoverBound(cfg.Timing, p), describe(s))
	}
	v, _ := s.Agreement()
	switch {
	case victim == master && !slices.Contains(slaves, v.Coordinator):
		return fmt.Errorf("N=%d crash master %s: new master %s was not a slave (slaves %v)", n, victim, v.Coordinator, slaves)
	case victim != master && v.Coordinator != master:
		return fmt.Errorf("N=%d crash %s: master changed from %s to %s", n, victim, master, v.Coordinator)
	}
	started := totalStarted(s)
	var violation error
	s.RunUntil(func() bool {
		if m, _ := emRoles(s); len(m) != 1 || m[0] != v.Coordinator {
			violation = fmt.Errorf("at %v (crash at %v): masters %v, want [%s]", s.Now(), start, m, v.Coordinator)
		}
		return violation != nil
	}, 5*time.Second)
	if violation != nil {
		return fmt.Errorf("N=%d crash %s: %w", n, victim, violation)
	}
	if totalStarted(s) != started {
		return fmt.Errorf("N=%d crash %s: an election started after settling: %s", n, victim, describe(s))
	}
	for _, id := range s.Living() {
		tally.add(s.Stats(id))
	}
	return tally.check(s)
}

// failoverBound bounds the time from a master's crash to agreement on its
// successor: detection (SuspectTimeout, plus a heartbeat interval of
// phase), the bully among the slaves (its T and T' twice over, for a
// restart), the wait for missed heartbeats, and the new master's first
// heartbeat (a second of slack for delays).
func failoverBound(t Timing, p Pool) time.Duration {
	return t.SuspectTimeout + t.HeartbeatInterval + 2*(t.AnswerTimeout+t.CoordinatorTimeout) +
		time.Duration(p.MissedHeartbeats)*t.HeartbeatInterval + time.Second
}

// TestEmergent_OneMasterAfterAnySingleFailure is property (c), and (b)
// over the same runs.
func TestEmergent_OneMasterAfterAnySingleFailure(t *testing.T) {
	failed := 0
	for seed := uint64(1); seed <= emSeeds(); seed++ {
		if err := singleFailureRun(seed, sentTally{}); err != nil {
			t.Errorf("seed %d: %v", seed, err)
			if failed++; failed == 5 {
				t.FailNow()
			}
		}
	}
}

// TestEmergent_ElectionCostIndependentOfIdlePool pins the counts of the
// package doc in emergent.go, exactly, with every message taking one
// millisecond: a pool of S slaves (Lower = S), the master nN crashed,
// and one slave told of it. The highest slave first: S - 1 Coordinator
// messages. The lowest slave first: the bully's worst case among S,
// S(S-1)/2 Election, as many Answers (every slave is alive) and S - 1
// Coordinator. The same
// whatever N, which is the seed's claim; no idle node sends anything.
func TestEmergent_ElectionCostIndependentOfIdlePool(t *testing.T) {
	for _, size := range []int{3, 5, 7} {
		for _, n := range []int{size + 2, 16, 64, 256} {
			for _, lowest := range []bool{false, true} {
				t.Run(fmt.Sprintf("S=%d/N=%d/lowest=%v", size, n, lowest), func(t *testing.T) {
					cfg := fixedDelay(DefaultSimConfig(Emergent, n, 1))
					cfg.Pool.Lower, cfg.Pool.Upper = size, size+2
					cfg.Coordinator, cfg.Crashed = SimID(n), []string{SimID(n)}
					s := mustNewSim(t, cfg)
					detector := n - 1
					want := map[Kind]uint64{KindCoordinator: uint64(size - 1)}
					if lowest {
						detector = n - size
						want[KindElection] = triangular(size - 1)
						want[KindAnswer] = triangular(size - 1)
					}
					s.Suspect(SimID(detector), SimID(n))
					mustSettle(t, s)
					var total uint64
					for _, c := range want {
						total += c
					}
					assertElectionCounts(t, s, want, total)
					assertAgree(t, s, SimID(n-1), 2)
					tally := sentTally{}
					for _, id := range s.Living() {
						tally.add(s.Stats(id))
					}
					if err := tally.check(s); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// assertElectionCounts is assertCounts for the emergent algorithm: the
// pool may still repair itself after the election (an idle node promotes
// to replace the new master), which sends slave heartbeats but no
// election message.
func assertElectionCounts(t *testing.T, s *Sim, want map[Kind]uint64, total uint64) {
	t.Helper()
	check := func(when string) {
		t.Helper()
		sent := s.Sent()
		var sum uint64
		for k, n := range sent {
			if !k.heartbeat() {
				sum += n
			}
		}
		for k, n := range want {
			if sent[k] != n {
				t.Errorf("%s: %v messages = %d, want %d (all: %v)", when, k, sent[k], n, sent)
			}
		}
		if sum != total {
			t.Errorf("%s: election messages = %d, want %d (all: %v)", when, sum, total, sent)
		}
	}
	check("settled")
	s.Run(5 * time.Second)
	check("5s later")
}

// TestEmergent_NodeOverMux runs the emergent algorithm on five real nodes
// over internal/mux with pool limits 2 and 3: they elect a master, every
// node reports its role, and the pool holds two or three slaves; the
// master is closed, and the other four elect another from the slaves.
func TestEmergent_NodeOverMux(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	nodes := mustStartCluster(t, Emergent, 5)
	settled := func(ns []*testNode) func() bool {
		return func() bool {
			if !agreeOn(ns, "") {
				return false
			}
			masters, pool := 0, 0
			for _, n := range ns {
				switch n.node.Stats().Role {
				case "master":
					masters++
				case "slave":
					pool++
				case "idle":
				default:
					return false
				}
			}
			return masters == 1 && pool >= 2 && pool <= 3
		}
	}
	waitFor(t, "a master and a pool of 2..3 slaves", settled(nodes))
	master, _, _ := nodes[0].node.Coordinator()
	var slaves []string
	for _, n := range nodes {
		if n.node.Stats().Role == "slave" {
			slaves = append(slaves, n.id)
		}
	}
	i := slices.IndexFunc(nodes, func(n *testNode) bool { return n.id == master })
	if err := nodes[i].node.Close(); err != nil {
		t.Fatalf("close %s: %v", master, err)
	}
	_ = nodes[i].mux.Close()
	rest := slices.Delete(slices.Clone(nodes), i, i+1)
	waitFor(t, "a new master among the other four", settled(rest))
	next, _, _ := rest[0].node.Coordinator()
	if next == master || !slices.Contains(slaves, next) {
		t.Fatalf("new master %s; old %s, slaves then %v", next, master, slaves)
	}
	for _, n := range rest {
		st := n.node.Stats()
		if st.Role == "idle" && len(st.SentByRole["idle"]) > 0 {
			t.Errorf("%s sent while idle: %v", n.id, st.SentByRole["idle"])
		}
	}
	t.Logf("master %s, then %s (slaves were %v)", master, next, slaves)
}
