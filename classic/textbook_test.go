package classic

import (
	"fmt"
	"testing"
	"time"
)

// The textbook message counts, pinned exactly. Every run here is free of
// failures while it lasts, and every message takes one millisecond, so
// the counts cannot depend on timing. Heartbeats flow throughout and are
// counted apart; the counts below are election messages only.

// TestRing_TextbookCounts pins the ring's figures. N processes, the
// highest rank nN is the would-be leader, the ring runs n1 -> n2 -> ... ->
// nN -> n1, and the cluster was running with nN as coordinator when
// process nk calls an election.
//
// Derivation (UIUC CS 425 lecture 11, "Worst-case analysis" and "Best
// case"; Edinburgh lecture 11, "3N - 1 messages"):
//   - Election messages from the initiator nk to nN: N - k hops (each
//     process on the way replaces the id with its own, as it is not yet a
//     participant).
//   - Election(nN) once round the ring, unchanged, back to nN: N messages;
//     the last one, which nN receives, counts.
//   - Elected(nN) once round the ring back to nN: N messages; again the
//     one that comes home counts.
//
// So k = N (the initiator is the would-be leader) costs 0 + N + N = 2N,
// and k = 1 (the initiator is the would-be leader's successor) costs
// (N - 1) + N + N = 3N - 1, the textbooks' best and worst cases.
func TestRing_TextbookCounts(t *testing.T) {
	for _, n := range []int{3, 5, 8, 16} {
		cases := []struct {
			name          string
			initiator     int
			election      uint64
			elected, want uint64
		}{
			{"best: initiator is the would-be leader", n, uint64(n), uint64(n), uint64(2 * n)},
			{"worst: initiator is the would-be leader's successor", 1, uint64(2*n - 1), uint64(n), uint64(3*n - 1)},
			{"middle initiator", n / 2, uint64(2*n - n/2), uint64(n), uint64(3*n - n/2)},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("N=%d/%s", n, tc.name), func(t *testing.T) {
				cfg := fixedDelay(DefaultSimConfig(Ring, n, 1))
				cfg.Coordinator = SimID(n)
				s := mustNewSim(t, cfg)
				s.Elect(SimID(tc.initiator))
				mustSettle(t, s)
				assertCounts(t, s, map[Kind]uint64{KindElection: tc.election, KindElected: tc.elected}, tc.want)
				assertAgree(t, s, SimID(n), 2)
			})
		}
	}
}

// TestBully_TextbookCounts pins the bully's figures. N processes; the
// coordinator nN has crashed (it is one of the N, as in the slides), and
// exactly one living process detects it; the others learn of the election
// from messages alone.
//
// Derivation, when the detector is nk (UIUC CS 425 lecture 11,
// "Analysis"; Edinburgh lecture 11, "Bully Algorithm Characteristics"):
//   - k = N-1, the second-highest: it knows it is the highest living
//     process, so it sends Coordinator to each of the N - 2 lower ids and
//     nothing else (UIUC "Best-case": N - 2 Coordinator messages).
//   - k < N-1: nk sends Election to every higher id, the dead nN included
//     (N - k messages). Each living nr above it, k < r < N, answers and
//     runs its own election, sending N - r. Election messages:
//     (N-k) + (N-k-1) + ... + 1 = (N-k)(N-k+1)/2; for the lowest, k = 1,
//     that is N(N-1)/2, the triangular number of the slides ("the i-th
//     highest id process sends i-1 election messages").
//   - Answers: each living nr, k < r < N, answers the Election of every
//     process from nk to n(r-1): r - k answers, (N-k-1)(N-k)/2 in all;
//     (N-1)(N-2)/2 when k = 1. nN is dead and answers nothing.
//   - Coordinator: n(N-1) gets no Answer within T and tells the N - 2
//     lower ids. No one else announces: every other process got an Answer
//     and its T' outlasts n(N-1)'s T.
func TestBully_TextbookCounts(t *testing.T) {
	for _, n := range []int{3, 5, 8, 16} {
		type row struct {
			name     string
			detector int
		}
		rows := []row{
			{"best: second-highest detects", n - 1},
			{"worst: lowest detects", 1},
		}
		if n >= 5 {
			rows = append(rows, row{"middle detects", n / 2})
		}
		for _, tc := range rows {
			t.Run(fmt.Sprintf("N=%d/%s", n, tc.name), func(t *testing.T) {
				k := tc.detector
				var election, answer uint64
				if k < n-1 {
					election = triangular(n - k)   // (N-k)(N-k+1)/2
					answer = triangular(n - k - 1) // (N-k-1)(N-k)/2
				}
				coordinator := uint64(n - 2)
				if k == 1 {
					// The slides' worst case, stated in closed form.
					if election != uint64(n*(n-1)/2) || answer != uint64((n-1)*(n-2)/2) {
						t.Fatalf("derivation: %d, %d", election, answer)
					}
				}
				cfg := fixedDelay(DefaultSimConfig(Bully, n, 1))
				cfg.Coordinator, cfg.Crashed = SimID(n), []string{SimID(n)}
				s := mustNewSim(t, cfg)
				s.Suspect(SimID(k), SimID(n))
				mustSettle(t, s)
				assertCounts(t, s, map[Kind]uint64{
					KindElection: election, KindAnswer: answer, KindCoordinator: coordinator,
				}, election+answer+coordinator)
				assertAgree(t, s, SimID(n-1), 2)
			})
		}
	}
}

// assertCounts checks the election messages sent by kind and in total,
// and then that they stay so while heartbeats go on: the run is over.
func assertCounts(t *testing.T, s *Sim, want map[Kind]uint64, total uint64) {
	t.Helper()
	check := func(when string) {
		t.Helper()
		sent := s.Sent()
		var sum uint64
		for k, n := range sent {
			if k != KindHeartbeat {
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
	if s.Sent()[KindHeartbeat] == 0 {
		t.Errorf("no heartbeats were sent")
	}
}

// assertAgree checks that every running node knows coord at epoch.
func assertAgree(t *testing.T, s *Sim, coord string, epoch uint64) {
	t.Helper()
	v, ok := s.Agreement()
	if !ok || v.Coordinator != coord || v.Epoch != epoch {
		t.Errorf("agreement = %+v, %v; want %s at epoch %d: %s", v, ok, coord, epoch, describe(s))
	}
}
