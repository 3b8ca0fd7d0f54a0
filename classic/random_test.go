package classic

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// seeds is how many random runs each randomized test makes.
const seeds = 1000

// crashScenario is one random run: several processes start an election
// at about the same time, and some crash while it runs.
type crashScenario struct {
	n          int
	fresh      bool          // every node boots fresh: all start at once
	initiators []string      // detect the old coordinator's failure
	crashes    []string      // crash during the election
	crashAt    time.Duration // the last crash
}

// newCrashScenario draws a scenario from seed: 3 to 8 nodes; in three
// runs of four the old coordinator (the highest) is already dead and 2 to
// N-1 of the others detect it within 5ms, in the fourth every node boots
// at once and runs its start-up election; then up to all but one of the
// living crash within the first 150ms, while the election runs.
func newCrashScenario(alg Algorithm, seed uint64) (*Sim, crashScenario, error) {
	rng := rand.New(rand.NewPCG(seed, 7))
	sc := crashScenario{n: 3 + rng.IntN(6), fresh: rng.IntN(4) == 0}
	cfg := DefaultSimConfig(alg, sc.n, seed)
	old := SimID(sc.n)
	if !sc.fresh {
		cfg.Coordinator, cfg.Crashed = old, []string{old}
	}
	s, err := NewSim(cfg)
	if err != nil {
		return nil, sc, err
	}
	living := s.Living()
	if !sc.fresh {
		for _, i := range rng.Perm(len(living))[:2+rng.IntN(len(living)-1)] {
			id := living[i]
			sc.initiators = append(sc.initiators, id)
			s.At(time.Duration(rng.IntN(5001))*time.Microsecond, func() { s.Suspect(id, old) })
		}
	}
	for _, i := range rng.Perm(len(living))[:rng.IntN(len(living))] {
		id, at := living[i], time.Duration(rng.IntN(150))*time.Millisecond
		sc.crashes = append(sc.crashes, id)
		sc.crashAt = max(sc.crashAt, at)
		s.At(at, func() { s.Crash(id) })
	}
	return s, sc, nil
}

// runCrashScenario plays the scenario of seed and checks that every living
// node ends with the highest living id as coordinator, and stays so.
func runCrashScenario(alg Algorithm, seed uint64) error {
	s, sc, err := newCrashScenario(alg, seed)
	if err != nil {
		return err
	}
	s.Run(sc.crashAt + time.Millisecond)
	if _, ok := s.Settle(settleLimit); !ok {
		return fmt.Errorf("%+v: not settled: %s", sc, describe(s))
	}
	v, _ := s.Agreement()
	if want := highestLiving(s); v.Coordinator != want {
		return fmt.Errorf("%+v: coordinator %s, want the highest living %s: %s", sc, v.Coordinator, want, describe(s))
	}
	started := totalStarted(s)
	s.Run(3 * time.Second)
	if after, ok := s.Agreement(); !ok || after != v || totalStarted(s) != started {
		return fmt.Errorf("%+v: settled on %+v, then changed: %s", sc, v, describe(s))
	}
	return nil
}

func totalStarted(s *Sim) uint64 {
	var n uint64
	for _, id := range s.Living() {
		n += s.Stats(id).ElectionsStarted
	}
	return n
}

// TestElection_HighestLivingWinsDespiteCrashes is acceptance 2: with
// several simultaneous initiators and crashes during the election, every
// living node ends with the same coordinator, the highest living id, for
// 1000 seeds each of ring and bully.
func TestElection_HighestLivingWinsDespiteCrashes(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		t.Run(string(alg), func(t *testing.T) {
			failed := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				if err := runCrashScenario(alg, seed); err != nil {
					t.Errorf("seed %d: %v", seed, err)
					if failed++; failed == 5 {
						t.FailNow()
					}
				}
			}
		})
	}
}

// TestRing_MultipleInitiatorsOneRound checks the ring's multiple-initiator
// rule: with no failures, however many processes start at once, the lower
// runs are swallowed by participants and exactly one Elected round (N
// messages) is sent, for the highest id.
func TestRing_MultipleInitiatorsOneRound(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := 3 + rng.IntN(14)
		cfg := DefaultSimConfig(Ring, n, seed)
		cfg.Coordinator = SimID(n)
		s := mustNewSim(t, cfg)
		k := 2 + rng.IntN(n-1)
		for _, i := range rng.Perm(n)[:k] {
			id := SimID(i + 1)
			s.At(time.Duration(rng.IntN(3001))*time.Microsecond, func() { s.Elect(id) })
		}
		s.Run(4 * time.Millisecond)
		mustSettle(t, s)
		var suppressed, started uint64
		for _, id := range s.IDs() {
			st := s.Stats(id)
			suppressed += st.Suppressed
			started += st.ElectionsStarted
		}
		v, _ := s.Agreement()
		if got := s.Sent()[KindElected]; got != uint64(n) || v.Coordinator != SimID(n) {
			t.Fatalf("seed %d, N=%d, %d initiators: Elected = %d, coordinator %s; want %d, %s",
				seed, n, k, got, v.Coordinator, n, SimID(n))
		}
		if suppressed < started-1 {
			t.Fatalf("seed %d: %d runs started but only %d messages suppressed", seed, started, suppressed)
		}
	}
}

// TestSim_SameSeedSameRun checks that a run is a function of its config
// and the calls made: two Sims with the same seed send the same messages
// and settle at the same virtual time.
func TestSim_SameSeedSameRun(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(string(alg), func(t *testing.T) {
			type result struct {
				at   time.Duration
				sent string
			}
			run := func() result {
				s, sc, err := newCrashScenario(alg, 42)
				if err != nil {
					t.Fatal(err)
				}
				s.Run(sc.crashAt + time.Millisecond)
				at, _ := s.Settle(settleLimit)
				return result{at, fmt.Sprint(s.Sent())}
			}
			if a, b := run(), run(); a != b {
				t.Errorf("same seed, different runs: %+v and %+v", a, b)
			}
		})
	}
}

// TestElection_HighestWinsAfterDropsAndPartitions goes beyond the
// textbook's reliable network, for ring and bully: with 3% of messages
// lost, and through random partitions (during which both can have several
// coordinators), every run still ends, once the network heals, with the
// highest living id as the one coordinator.
func TestElection_HighestWinsAfterDropsAndPartitions(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		t.Run(string(alg), func(t *testing.T) {
			for seed := uint64(1); seed <= 200; seed++ {
				rng := rand.New(rand.NewPCG(seed, 13))
				cfg := DefaultSimConfig(alg, 2+rng.IntN(9), seed)
				cfg.DropRate = 0.03
				s := mustNewSim(t, cfg)
				ids := s.IDs()
				for round := 0; round < 2; round++ {
					s.Run(time.Duration(rng.IntN(1000)) * time.Millisecond)
					cut := 1 + rng.IntN(len(ids)-1)
					perm := rng.Perm(len(ids))
					var a, b []string
					for i, p := range perm {
						if i < cut {
							a = append(a, ids[p])
						} else {
							b = append(b, ids[p])
						}
					}
					s.Partition(a, b)
					s.Run(time.Duration(rng.IntN(3000)) * time.Millisecond)
					s.Heal()
					if _, ok := s.Settle(settleLimit); !ok {
						t.Fatalf("seed %d round %d: not settled: %s", seed, round, describe(s))
					}
					if v, _ := s.Agreement(); v.Coordinator != highestLiving(s) {
						t.Fatalf("seed %d round %d: coordinator %s: %s", seed, round, v.Coordinator, describe(s))
					}
				}
			}
		})
	}
}
