package lease

import (
	"testing"
	"time"
)

func TestAutopilotDecide(t *testing.T) {
	const after = 3 * time.Second
	p := apPolicy{Voters: 3, After: after, MaxLag: 100}
	leader := apMember{ID: "n1", Addr: "a1", Voter: true, Self: true, Healthy: true, VoterFor: time.Hour, Applied: 1000}
	voter := func(id string) apMember {
		return apMember{ID: id, Addr: "a-" + id, Voter: true, Healthy: true, HealthyFor: time.Hour, VoterFor: time.Hour, Applied: 1000}
	}
	down := func(m apMember, d time.Duration) apMember {
		m.Healthy, m.HealthyFor, m.DownFor = false, 0, d
		return m
	}
	nonVoter := func(id string, applied uint64) apMember {
		return apMember{ID: id, Addr: "a-" + id, Healthy: true, HealthyFor: time.Hour, Applied: applied}
	}
	fresh := func(m apMember, d time.Duration) apMember { m.VoterFor = d; return m }
	young := func(m apMember, d time.Duration) apMember { m.HealthyFor = d; return m }
	none := apAction{}
	tests := []struct {
		name   string
		ms     []apMember
		policy apPolicy
		want   apAction // Kind "" means no change
	}{
		{"off", []apMember{leader, down(voter("n2"), time.Hour), voter("n3"), nonVoter("n4", 1000)}, apPolicy{After: after, MaxLag: 100}, none},
		{"all healthy", []apMember{leader, voter("n2"), voter("n3"), nonVoter("n4", 1000)}, p, none},
		{"dead voter replaced by the most caught-up non-voter",
			[]apMember{leader, down(voter("n2"), after), voter("n3"), nonVoter("n4", 990), nonVoter("n5", 1000)}, p,
			apAction{Kind: apPromote, ID: "n5", Addr: "a-n5"}},
		{"voter down, not yet for long enough",
			[]apMember{leader, down(voter("n2"), after-time.Millisecond), voter("n3"), nonVoter("n4", 1000)}, p, none},
		{"dead voter, but the non-voter is behind",
			[]apMember{leader, down(voter("n2"), time.Hour), voter("n3"), nonVoter("n4", 899)}, p, none},
		{"dead voter, but the non-voter is unhealthy",
			[]apMember{leader, down(voter("n2"), time.Hour), voter("n3"), down(nonVoter("n4", 1000), time.Second)}, p, none},
		{"dead voter, but the non-voter has not been healthy for long enough",
			[]apMember{leader, down(voter("n2"), time.Hour), voter("n3"), young(nonVoter("n4", 1000), after-time.Millisecond)}, p, none},
		{"dead voter and no non-voter: kept",
			[]apMember{leader, down(voter("n2"), time.Hour), voter("n3")}, p, none},
		{"after the promotion the dead voter is removed",
			[]apMember{leader, down(voter("n2"), time.Hour), voter("n3"), fresh(voter("n4"), 0)}, p,
			apAction{Kind: apRemove, ID: "n2", Addr: "a-n2"}},
		{"the longest dead is removed first",
			[]apMember{leader, down(voter("n2"), after), voter("n3"), down(voter("n4"), time.Hour), voter("n5"), voter("n6")}, apPolicy{Voters: 3, After: after, MaxLag: 100},
			apAction{Kind: apRemove, ID: "n4", Addr: "a-n4"}},
		{"two of three voters dead: no quorum for a promotion",
			[]apMember{leader, down(voter("n2"), time.Hour), down(voter("n3"), time.Hour), nonVoter("n4", 1000)}, p, none},
		{"removal that would leave no healthy quorum is not made",
			// 4 voters, 2 dead: removing one leaves 3 voters, 2 healthy: a quorum, so it goes.
			[]apMember{leader, down(voter("n2"), time.Hour), down(voter("n3"), 2*time.Hour), voter("n4")}, p,
			apAction{Kind: apRemove, ID: "n3", Addr: "a-n3"}},
		{"5 voters, 3 dead: nothing (2 healthy are no quorum of 4)",
			[]apMember{leader, down(voter("n2"), time.Hour), down(voter("n3"), time.Hour), down(voter("n4"), time.Hour), voter("n5"), nonVoter("n6", 1000)},
			apPolicy{Voters: 3, After: after, MaxLag: 100}, none},
		{"too few voters: promote",
			[]apMember{leader, voter("n2"), nonVoter("n3", 1000)}, p,
			apAction{Kind: apPromote, ID: "n3", Addr: "a-n3"}},
		{"too few voters, no caught-up non-voter",
			[]apMember{leader, voter("n2"), nonVoter("n3", 10)}, p, none},
		{"too many voters: demote the unhealthy one",
			[]apMember{leader, voter("n2"), down(voter("n3"), time.Second), voter("n4"), voter("n5")}, p,
			apAction{Kind: apDemote, ID: "n3", Addr: "a-n3"}},
		{"too many voters, all healthy: demote the furthest behind, never the leader",
			[]apMember{func() apMember { m := leader; m.Applied = 1; return m }(), voter("n2"), func() apMember { m := voter("n3"); m.Applied = 900; return m }(), voter("n4")}, p,
			apAction{Kind: apDemote, ID: "n3", Addr: "a-n3"}},
		{"too many voters, but the extra was promoted lately",
			[]apMember{leader, voter("n2"), voter("n3"), fresh(voter("n4"), after-time.Millisecond)}, apPolicy{Voters: 3, After: after, MaxLag: 100},
			// n2 and n3 are old: one of them goes (same applied index: the larger id).
			apAction{Kind: apDemote, ID: "n3", Addr: "a-n3"}},
		{"too many voters, all promoted lately: wait",
			[]apMember{leader, fresh(voter("n2"), time.Second), fresh(voter("n3"), time.Second), fresh(voter("n4"), time.Second)}, p, none},
		{"a leader alone with voters 1 keeps itself",
			[]apMember{leader}, apPolicy{Voters: 1, After: after, MaxLag: 100}, none},
		{"demotion that would leave no healthy quorum is not made",
			// 5 voters, 2 down (not dead yet): demoting a healthy one leaves
			// 2 healthy of 4; the unhealthy ones go first and leave 3 of 4.
			[]apMember{leader, voter("n2"), voter("n3"), down(voter("n4"), time.Second), down(voter("n5"), time.Second)}, p,
			apAction{Kind: apDemote, ID: "n5", Addr: "a-n5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decide(tt.ms, 1000, tt.policy)
			if ok != (tt.want.Kind != "") {
				t.Fatalf("decide = %+v, %v; want %+v", got, ok, tt.want)
			}
			if got.Reason == "" && ok {
				t.Errorf("change %+v has no reason", got)
			}
			got.Reason = ""
			if got != tt.want {
				t.Fatalf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Applying decide's changes one at a time to a model configuration never
// takes the healthy voters below a quorum of either the configuration
// before the change or the one after, and ends with the wanted number of
// voters when enough healthy members exist.
func TestAutopilotDecide_Converges(t *testing.T) {
	p := apPolicy{Voters: 3, After: time.Second, MaxLag: 10}
	type node struct {
		id           string
		voter, alive bool
	}
	for mask := 0; mask < 1<<5; mask++ {
		for voters := 1; voters <= 5; voters++ {
			nodes := []node{{"n1", true, true}}
			for i := 2; i <= 6; i++ {
				nodes = append(nodes, node{id: string(rune('0'+i)) + "x", voter: i <= voters, alive: mask&(1<<(i-2)) == 0})
			}
			alive, hv := 0, 0
			for _, n := range nodes {
				if n.alive {
					alive++
					if n.voter {
						hv++
					}
				}
			}
			hasQuorum := hv >= quorum(min(voters, 6))
			final := func() (nv, healthy int) {
				for _, n := range nodes {
					if n.voter {
						nv++
						if n.alive {
							healthy++
						}
					}
				}
				return nv, healthy
			}
			for step := 0; step < 20; step++ {
				var ms []apMember
				nv, healthy := 0, 0
				for i, n := range nodes {
					m := apMember{ID: n.id, Voter: n.voter, Self: i == 0, Healthy: n.alive, VoterFor: time.Hour, Applied: 100}
					if n.alive {
						m.HealthyFor = time.Hour
					} else {
						m.DownFor = time.Hour
					}
					ms = append(ms, m)
					if n.voter {
						nv++
						if n.alive {
							healthy++
						}
					}
				}
				a, ok := decide(ms, 100, p)
				if !ok {
					if nv, h := final(); hasQuorum && alive >= p.Voters && (nv != p.Voters || h != p.Voters) {
						t.Fatalf("mask %b voters %d: stopped at %d voters, %d healthy; want %d healthy voters", mask, voters, nv, h, p.Voters)
					}
					break
				}
				for i := range nodes {
					if nodes[i].id != a.ID {
						continue
					}
					switch a.Kind {
					case apPromote:
						nodes[i].voter = true
						nv, healthy = nv+1, healthy+1
					case apDemote:
						nodes[i].voter = false
						nv--
						if nodes[i].alive {
							healthy--
						}
					case apRemove:
						nodes = append(nodes[:i], nodes[i+1:]...)
						nv--
					}
					break
				}
				if healthy < quorum(nv) {
					t.Fatalf("mask %b voters %d: after %+v, %d healthy voters of %d", mask, voters, a, healthy, nv)
				}
				if i := len(nodes); step == 19 {
					t.Fatalf("mask %b voters %d: no fixed point after 20 changes (%d nodes)", mask, voters, i)
				}
			}
		}
	}
}
