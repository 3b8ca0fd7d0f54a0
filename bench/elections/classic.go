package elections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockd/lockd/classic"
)

// The classic scenarios. Best and Worst are deterministic: every message
// takes exactly one millisecond (as in package classic's textbook tests),
// so their counts and times depend on nothing but N. Agreement is
// classic.Sim.Settled: every living node knows the same living
// coordinator and takes part in no election, and no election message is
// in flight.
//
//   - Ring (classic's TestRing_TextbookCounts): the cluster runs with nN,
//     the highest id, as coordinator, and one process calls an election.
//     Best: the initiator is nN itself, the would-be leader (2N
//     messages). Worst: the initiator is n1, the would-be leader's
//     successor on the ring (3N-1).
//   - Bully (classic's TestBully_TextbookCounts): the coordinator nN has
//     crashed and exactly one living process detects it. Best: the
//     second-highest, n(N-1), which sends N-2 Coordinator messages.
//     Worst: the lowest, n1, which sets off every election above it:
//     N(N-1)/2 Election, (N-1)(N-2)/2 Answer and N-2 Coordinator.
//   - Invitation, which the textbooks give no figures for; its cost is
//     merging groups. Best: two groups merge after a partition heals.
//     The cluster runs with nN as coordinator, splits into the lower
//     half n1..n(N-N/2) and the upper half (as classic's
//     TestPartition_SplitBrainAndGroups splits five nodes into n1-n3 and
//     n4-n5), each half settles into a group of its own, and at the
//     heal nN calls for an election: it probes the N-N/2 processes of the
//     lower half at once instead of at its next check, and invites them
//     all. Worst: every process boots at once (classic.Sim boots them in
//     rank order at time zero, so the probes a process sends to higher
//     ranks not booted yet are lost), each forms a singleton group and
//     probes every other, and all N merge.
//
// Random, the same for all three: the coordinator nN has crashed; 1 to
// N-1 living processes, drawn from the seed, detect it at random times
// within RandomDetectWindow; every message takes RandomMinDelay to
// RandomMaxDelay. The time runs from the first detection.
const (
	// RandomMinDelay and RandomMaxDelay bound the one-way delay of a
	// message in the Random scenario, classic and Raft alike.
	RandomMinDelay = time.Millisecond
	RandomMaxDelay = 5 * time.Millisecond
	// RandomDetectWindow is how far apart the detections of a classic
	// Random run may be.
	RandomDetectWindow = 5 * time.Millisecond
	// settleLimit bounds the virtual time a classic election may take;
	// classic's own tests use the same.
	settleLimit = 60 * time.Second
	// sideSettleLimit bounds the virtual time each side of the
	// invitation's partition may take to form its group, and
	// sideQuiet is how long it then runs on to be sure it has.
	sideSettleLimit = 60 * time.Second
	sideQuiet       = 2 * time.Second
	// afterTick is how long after a probe tick the invitation's best case
	// heals: enough for the tick's probes and replies to land.
	afterTick = 10 * time.Millisecond
)

const heartbeat = classic.KindHeartbeat

func classicAlg(a Algorithm) classic.Algorithm { return classic.Algorithm(a) }

// simRun is a Sim made ready for one election: the election starts at
// virtual time start, and the messages sent before it are in before.
type simRun struct {
	sim    *classic.Sim
	start  time.Duration
	before map[classic.Kind]uint64
}

// measureClassic runs one classic election and counts it.
func measureClassic(alg Algorithm, n int, sc Scenario, seed uint64) (sample, error) {
	run, err := setupClassic(alg, n, sc, seed)
	if err != nil {
		return sample{}, err
	}
	at, ok := run.sim.Settle(settleLimit)
	if !ok {
		return sample{}, fmt.Errorf("%w: %s N=%d %s seed %d: no agreement after %v",
			ErrNotSettled, alg, n, sc, seed, settleLimit)
	}
	s := sample{kinds: map[string]uint64{}, time: at - run.start}
	for k, c := range run.sim.Sent() {
		d := c - run.before[k]
		switch {
		case k == heartbeat:
			s.heartbeats = d
		case d > 0:
			s.kinds[k.String()] = d
		}
	}
	return s, nil
}

func setupClassic(alg Algorithm, n int, sc Scenario, seed uint64) (simRun, error) {
	switch {
	case sc == Random:
		return setupRandom(alg, n, seed)
	case alg == Ring:
		return setupRing(n, sc)
	case alg == Bully:
		return setupBully(n, sc)
	case alg == Invitation:
		return setupInvitation(n, sc)
	}
	return simRun{}, fmt.Errorf("%w: %q is not a classic algorithm", ErrInvalidConfig, alg)
}

// textbookConfig is classic's textbook setup: DefaultSimConfig with
// every message taking exactly one millisecond.
func textbookConfig(alg Algorithm, n int) classic.SimConfig {
	cfg := classic.DefaultSimConfig(classicAlg(alg), n, 1)
	cfg.MinDelay, cfg.MaxDelay = time.Millisecond, time.Millisecond
	return cfg
}

func setupRing(n int, sc Scenario) (simRun, error) {
	cfg := textbookConfig(Ring, n)
	cfg.Coordinator = classic.SimID(n)
	s, err := classic.NewSim(cfg)
	if err != nil {
		return simRun{}, err
	}
	initiator := n // best: the would-be leader
	if sc == Worst {
		initiator = 1 // its successor on the ring
	}
	s.Elect(classic.SimID(initiator))
	return simRun{sim: s}, nil
}

func setupBully(n int, sc Scenario) (simRun, error) {
	cfg := textbookConfig(Bully, n)
	cfg.Coordinator, cfg.Crashed = classic.SimID(n), []string{classic.SimID(n)}
	s, err := classic.NewSim(cfg)
	if err != nil {
		return simRun{}, err
	}
	detector := n - 1 // best: the second-highest
	if sc == Worst {
		detector = 1 // the lowest
	}
	s.Suspect(classic.SimID(detector), classic.SimID(n))
	return simRun{sim: s}, nil
}

func setupInvitation(n int, sc Scenario) (simRun, error) {
	cfg := textbookConfig(Invitation, n)
	if sc == Worst {
		// Every process boots fresh: N singleton groups.
		s, err := classic.NewSim(cfg)
		return simRun{sim: s}, err
	}
	cfg.Coordinator = classic.SimID(n)
	s, err := classic.NewSim(cfg)
	if err != nil {
		return simRun{}, err
	}
	ids := s.IDs()
	lower, upper := ids[:n-n/2], ids[n-n/2:]
	s.Partition(lower, upper)
	if _, ok := s.RunUntil(func() bool { return sidesAgree(s, lower, upper) }, sideSettleLimit); !ok {
		return simRun{}, fmt.Errorf("%w: invitation N=%d: the sides of the partition formed no groups", ErrNotSettled, n)
	}
	s.Run(sideQuiet)
	// Every coordinator probes on the same CheckInterval ticks (all booted
	// at time zero). Heal just after a tick, once its probes are answered,
	// so that the merge (two ReplyTimeouts) is over before the next one:
	// only nN's probes then belong to the election, whatever N is.
	check := cfg.Timing.CheckInterval
	s.Run((s.Now()/check+1)*check + afterTick - s.Now())
	if !sidesAgree(s, lower, upper) {
		return simRun{}, fmt.Errorf("%w: invitation N=%d: the sides' groups did not hold", ErrNotSettled, n)
	}
	run := simRun{sim: s, start: s.Now(), before: s.Sent()}
	s.Heal()
	s.Elect(classic.SimID(n))
	return run, nil
}

// sidesAgree reports whether each side agrees on a coordinator of its own.
func sidesAgree(s *classic.Sim, sides ...[]string) bool {
	for _, side := range sides {
		v, ok := s.Agreement(side...)
		if !ok || !slices.Contains(side, v.Coordinator) {
			return false
		}
	}
	return true
}

// setupRandom crashes the coordinator nN at time zero and has 1 to N-1
// random living processes detect it within RandomDetectWindow, over a
// network of random delays; seed draws all of it.
func setupRandom(alg Algorithm, n int, seed uint64) (simRun, error) {
	cfg := classic.DefaultSimConfig(classicAlg(alg), n, seed)
	cfg.MinDelay, cfg.MaxDelay = RandomMinDelay, RandomMaxDelay
	old := classic.SimID(n)
	cfg.Coordinator, cfg.Crashed = old, []string{old}
	s, err := classic.NewSim(cfg)
	if err != nil {
		return simRun{}, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(n))) //nolint:gosec // G115: n counts nodes, never negative
	living := s.Living()
	start := RandomDetectWindow
	for _, i := range rng.Perm(len(living))[:1+rng.IntN(len(living))] {
		id := living[i]
		at := time.Duration(rng.Int64N(int64(RandomDetectWindow) + 1))
		start = min(start, at)
		s.At(at, func() { s.Suspect(id, old) })
	}
	return simRun{sim: s, start: start}, nil
}
