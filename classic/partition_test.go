package classic

import (
	"slices"
	"testing"
	"time"
)

// TestPartition_SplitBrainAndGroups is acceptance 3. Five nodes run with
// n5 as coordinator; the network splits into {n1, n2, n3} and {n4, n5}.
//
//   - Ring and bully: the side without n5 suspects it and elects n3, while
//     n5 goes on leading: two nodes each believe they coordinate the whole
//     cluster at once. When the partition heals, heartbeats bring the two
//     together and n5 wins.
//   - Invitation: each side ends with one group and one coordinator, each
//     group listing exactly its side; when the partition heals the
//     coordinators find each other and merge into one group of all five.
func TestPartition_SplitBrainAndGroups(t *testing.T) {
	sideA, sideB := []string{"n1", "n2", "n3"}, []string{"n4", "n5"}
	cases := []struct {
		alg Algorithm
		// groups: the algorithm knows it coordinates only its side.
		groups bool
	}{
		{Ring, false},
		{Bully, false},
		{Invitation, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.alg), func(t *testing.T) {
			cfg := DefaultSimConfig(tc.alg, 5, 3)
			cfg.Coordinator = "n5"
			s := mustNewSim(t, cfg)
			s.Partition(sideA, sideB)

			if _, ok := s.RunUntil(sidesSettled(s, sideA, sideB), settleLimit); !ok {
				t.Fatalf("sides did not settle: %s", describe(s))
			}
			s.Run(2 * time.Second) // and stay so
			va, _ := s.Agreement(sideA...)
			vb, ok := s.Agreement(sideB...)
			if !ok || va.Coordinator != "n3" || vb.Coordinator != "n5" {
				t.Fatalf("sides follow %+v and %+v, want n3 and n5: %s", va, vb, describe(s))
			}
			if got := s.Coordinators(); !slices.Equal(got, []string{"n3", "n5"}) {
				t.Fatalf("coordinators = %v, want [n3 n5] at once", got)
			}
			if tc.groups {
				// One group per side, each knowing exactly its side.
				for _, side := range [][]string{sideA, sideB} {
					for _, id := range side {
						if g := s.Stats(id).Group; !slices.Equal(g, side) {
							t.Errorf("%s's group = %v, want %v", id, g, side)
						}
					}
				}
			} else {
				// Split brain: each coordinator claims the whole cluster,
				// with no notion of a side.
				t.Logf("split brain: n3 at epoch %d and n5 at epoch %d both lead", va.Epoch, vb.Epoch)
			}

			s.Heal()
			if _, ok := s.Settle(settleLimit); !ok {
				t.Fatalf("did not merge after heal: %s", describe(s))
			}
			v, _ := s.Agreement()
			if !tc.groups && v.Coordinator != "n5" {
				t.Errorf("after heal: coordinator %s, want n5", v.Coordinator)
			}
			if got := s.Coordinators(); len(got) != 1 {
				t.Errorf("after heal: coordinators = %v, want one", got)
			}
			if tc.groups {
				for _, id := range s.IDs() {
					if g := s.Stats(id).Group; len(g) != 5 {
						t.Errorf("after heal: %s's group = %v, want all five", id, g)
					}
				}
			}
		})
	}
}

// TestInvitation_MergesAfterRandomPartitions runs the invitation
// algorithm through random partitions: while cut, every side settles on
// one coordinator per group and no group spans a cut; once healed, all
// nodes end in one group.
func TestInvitation_MergesAfterRandomPartitions(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		s := mustNewSim(t, DefaultSimConfig(Invitation, 2+int(seed%7), seed))
		ids := s.IDs()
		cut := 1 + int(seed)%(len(ids)-1)
		s.Run(time.Duration(seed%500) * time.Millisecond)
		s.Partition(ids[:cut], ids[cut:])
		if _, ok := s.RunUntil(sidesSettled(s, ids[:cut], ids[cut:]), settleLimit); !ok {
			t.Fatalf("seed %d: sides did not settle: %s", seed, describe(s))
		}
		if got := s.Coordinators(); len(got) != 2 {
			t.Fatalf("seed %d: coordinators %v, want one per side", seed, got)
		}
		s.Heal()
		if _, ok := s.Settle(settleLimit); !ok {
			t.Fatalf("seed %d: no merge after heal: %s", seed, describe(s))
		}
		if got := s.Coordinators(); len(got) != 1 {
			t.Fatalf("seed %d: coordinators %v after heal, want one", seed, got)
		}
	}
}
