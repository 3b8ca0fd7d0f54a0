package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

func sr(node string, proc int, index uint64, holder string, token uint64, call, ret int64) history.StaleRead {
	return history.StaleRead{Node: node, Proc: proc, Lock: "l", Index: index, Holder: holder, Token: token, Call: call, Return: ret}
}

func TestCheckStaleReads(t *testing.T) {
	const lag = 100
	tests := []struct {
		name  string
		reads []history.StaleRead
		acks  []history.Ack
		want  int
	}{
		{"forward", []history.StaleRead{sr("n1", 1, 5, "a", 5, 0, 10), sr("n1", 1, 7, "", 0, 20, 30)}, nil, 0},
		{"same state again", []history.StaleRead{sr("n1", 1, 5, "a", 5, 0, 10), sr("n1", 1, 5, "a", 5, 20, 30)}, nil, 0},
		{"back on one node", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 5, "b", 5, 20, 30)}, nil, 1},
		{"back to free at an older index", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 6, "", 0, 20, 30)}, nil, 1},
		{"same index, other holder", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 7, "b", 7, 20, 30)}, nil, 1},
		{"nodes lag differently", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n2", 1, 5, "b", 5, 20, 30)}, nil, 0},
		{"a restarted process starts behind", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 2, 5, "b", 5, 20, 30)}, nil, 0},
		{"concurrent reads may go either way", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 30), sr("n1", 1, 5, "b", 5, 10, 40)}, nil, 0},
		{"back after a concurrent read", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 9, "c", 9, 5, 40),
			sr("n1", 1, 5, "b", 5, 20, 50)}, nil, 1},
		{"caught up within the bound", []history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160), sr("n2", 1, 9, "b", 9, 150, 160)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 0},
		{"behind within the bound is allowed", []history.StaleRead{sr("n1", 1, 3, "a", 3, 120, 130)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 0},
		{"behind past the bound", []history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160), sr("n2", 1, 3, "z", 3, 150, 160)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 1},
		{"another lock's write", []history.StaleRead{sr("n1", 1, 3, "a", 3, 150, 160)},
			[]history.Ack{{Lock: "m", Index: 5, Return: 40}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckStaleReads(tt.reads, tt.acks, time.Duration(lag))
			if v.Violations != tt.want {
				t.Errorf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
			if v.Checker != StaleReads {
				t.Errorf("checker = %q", v.Checker)
			}
		})
	}
}

const sec = int64(time.Second)

// poll is a poll sample of node n's process proc, answered at ret.
func poll(node string, proc int, ret int64, leader string, applied uint64) Sample {
	return Sample{Node: node, Proc: proc, At: ret - 10, Return: ret, Leader: leader, Applied: applied, State: "Follower"}
}

// runAck is a write acknowledged during the run (a ?consistent read's
// index).
func runAck(index uint64, ret int64) history.Ack {
	return history.Ack{Lock: "l", Index: index, Return: ret, Run: true}
}

// TestCheckStale_LagDuringTheRun is issue 24's breach: a ?stale read
// lagging far behind during a run. Node n2's process said at 2 s that it
// had applied index 60; at 4.5 s, a partition of another node in force,
// it answers a ?stale read of l with index 30, though index 50 of l was
// acknowledged at 1 s. The old harness recorded acknowledged writes only
// after the heal (here index 70 at 40 s), and its checker passes the run;
// the new one, with the writes acknowledged during the run and the
// node's own applied index, catches it.
func TestCheckStale_LagDuringTheRun(t *testing.T) {
	reads := []history.StaleRead{sr("n2", 2, 30, "a", 30, 4500e6, 4510e6), sr("n2", 2, 70, "b", 70, 44*sec, 44*sec+10)}
	healed := history.Ack{Lock: "l", Index: 70, Return: 40 * sec}
	samples := []Sample{poll("n2", 2, 2*sec, "n1", 60)}
	faults := []FaultWindow{{Kind: "partition-node", From: 500e6, To: 6 * sec}}
	if v := oldCheckStaleReads(reads, []history.Ack{healed}, StaleLag); v.Violations != 0 {
		t.Fatalf("the old checker caught it already: %v", v.Details)
	}
	ev := StaleEvidence{Reads: reads, Acks: []history.Ack{runAck(50, 1*sec), healed}, Samples: samples, Faults: faults}
	v := CheckStale(ev, StaleLag)
	if v.Violations != 1 || !strings.Contains(v.Details[0], "had applied index 60") {
		t.Fatalf("new checker: %s %v", v, v.Details)
	}
	// A node cut off lags as far as its cut lasts: without its word that
	// it had applied past the write, the same read passes. (Comparing it
	// with the run's writes as with healed ones, as the old checker would
	// have, fails it.)
	ev.Samples = []Sample{poll("n2", 2, 2*sec, "", 20)}
	if v := CheckStale(ev, StaleLag); !v.OK() {
		t.Fatalf("a node that had not applied it: %s %v", v, v.Details)
	}
	if v := oldCheckStaleReads(reads, ev.Acks, StaleLag); v.Violations == 0 {
		t.Fatalf("the old checker given the run's writes would have passed a cut-off node's lag")
	}
}

func TestCheckStale(t *testing.T) {
	// Every case: lock l's index 50 acknowledged at 2.5 s.
	following := func(applied uint64) []Sample {
		var out []Sample
		for at := 3 * sec; at <= 7*sec; at += sec / 2 {
			out = append(out, poll("n2", 2, at, "n1", applied))
		}
		return out
	}
	settledBy2s := []FaultWindow{{Kind: "kill-node", From: 0, To: 1 * sec}} // settled at 1 s + 1 s
	tests := []struct {
		name    string
		read    history.StaleRead
		samples []Sample
		faults  []FaultWindow
		want    int
		checked bool
	}{
		// The node follows a leader but does not apply (it says so): the
		// lag bound, in a settled stretch, catches it.
		{"stuck node in a settled stretch", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), following(40), settledBy2s, 1, true},
		{"caught-up node in a settled stretch", sr("n2", 2, 50, "a", 50, 6*sec, 6*sec+10), following(40), settledBy2s, 0, true},
		{"too early after the write", sr("n2", 2, 40, "a", 40, 5*sec, 5*sec+10), following(40), settledBy2s, 0, false},
		{"a fault in force", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), following(40),
			append([]FaultWindow{{Kind: "partition-node", From: 5 * sec, To: 8 * sec}}, settledBy2s...), 0, false},
		// Raft backs off a follower it could not reach for about as long
		// as it could not: a fault of 2 s healed at 3.5 s settles at 5.5 s.
		{"not settled after a long fault", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), following(40),
			[]FaultWindow{{Kind: "partition-node", From: 1500e6, To: 3500e6}}, 0, false},
		{"settled after a short fault", sr("n2", 2, 40, "a", 40, 9*sec, 9*sec+10),
			append(following(40), poll("n2", 2, 8*sec, "n1", 40), poll("n2", 2, 8500e6, "n1", 40)),
			[]FaultWindow{{Kind: "partition-node", From: 1500e6, To: 3500e6}}, 1, true},
		// Faults that follow each other before the cluster settled count
		// as one: 0-1 s and 1.5-2.5 s settle at 2.5 s + 2.5 s.
		{"a chain of faults", sr("n2", 2, 40, "a", 40, 7*sec, 7*sec+10), following(40),
			[]FaultWindow{{Kind: "kill-node", From: 0, To: 1 * sec}, {Kind: "pause-node", From: 1500e6, To: 2500e6}}, 0, false},
		// A node removed from the cluster follows no leader: left behind.
		{"a node that follows no leader", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10),
			[]Sample{poll("n2", 2, 4*sec, "n1", 40), poll("n2", 2, 5*sec, "", 40)}, settledBy2s, 0, false},
		{"another process of the node", sr("n2", 3, 40, "a", 40, 6*sec, 6*sec+10), following(40), settledBy2s, 0, false},
		// What a node said it applied, it shows, faults or not: unless it
		// was paused in between.
		{"behind its own applied index under a fault", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), following(55),
			[]FaultWindow{{Kind: "partition-node", From: 5 * sec, To: 8 * sec}}, 1, true},
		{"too soon after saying so", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), []Sample{poll("n2", 2, 5*sec, "n1", 55)},
			[]FaultWindow{{Kind: "partition-node", From: 5 * sec, To: 8 * sec}}, 0, false},
		{"paused in between", sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10), following(55),
			[]FaultWindow{{Kind: "pause-node", From: 3500e6, To: 8 * sec}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := StaleEvidence{Reads: []history.StaleRead{tt.read}, Acks: []history.Ack{runAck(50, 2500e6)}, Samples: tt.samples, Faults: tt.faults}
			v := CheckStale(ev, StaleLag)
			if v.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
			if (v.Checked > 0) != tt.checked {
				t.Fatalf("checked %d reads (%s), want checked %v", v.Checked, v.Coverage, tt.checked)
			}
		})
	}
}
