package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// TestCheckHistory_EveryChecker saves a clean history with evidence that
// breaches one checker at a time and checks that --check catches each:
// every checker runs again from the saved evidence, not only
// linearizability and tokens. The clean evidence is of a run of the fenced
// workload alone, with enough of everything for every checker in force to
// decide; the lock workload's checkers are not in force.
func TestCheckHistory_EveryChecker(t *testing.T) {
	ops := []history.Op{
		{ID: 1, Lock: "l", Kind: history.Acquire, Session: "a", Token: 1, Status: history.OK, Call: 10, Return: 20},
		{ID: 2, Lock: "l", Kind: history.Release, Session: "a", Status: history.OK, Call: 30, Return: 40},
		{ID: 3, Lock: "l", Kind: history.Acquire, Session: "b", Token: 2, Status: history.OK, Call: 50, Return: 60},
	}
	clean := runner.Evidence{
		Fenced:     true,
		Grants:     []traffic.Grant{{Client: "child-0", Session: "c", Token: 4, Call: 100, Return: 110, Child: true}},
		Writes:     []traffic.Write{{Seq: 0, At: 120, Client: "child-0", Session: "c", Token: 4, Accepted: true}},
		Durability: validate.Verdict{Checker: validate.Durability},
		Samples:    []validate.Sample{{Round: 1, At: 5, Node: "n1", State: "Leader", Term: 2}},
		Events:     []history.Event{{At: 1, What: "cluster of 3 up"}},
		Leases:     []validate.LeaseLine{{Node: "n1", Term: 2, From: 1000, Until: 2000}},
		Holds:      []history.Hold{{Client: 1, Lock: "l", Session: "a", Token: 1, From: 20, To: 30}},
		Acks:       []history.Ack{{Lock: "l", Index: 3, Return: 70}},
		StaleReads: []history.StaleRead{{Node: "n1", Proc: 1, Lock: "l", Index: 3, Holder: "b", Token: 2, Call: 4e9, Return: 4e9 + 10}},
		Quiet: &validate.QuietWindow{Samples: []validate.QuietSample{{At: 5e9, Leader: "n1", Term: 2, Commit: 9},
			{At: 6e9, Leader: "n1", Term: 2, Commit: 9}}, Sessions: 1, Keepalives: 2},
		Workloads: []string{traffic.Fenced},
	}
	tests := []struct {
		name    string
		breach  func(ev *runner.Evidence)
		checker string
	}{
		{"clean", func(*runner.Evidence) {}, ""},
		{"a stale write accepted", func(ev *runner.Evidence) {
			ev.Writes = append(ev.Writes, traffic.Write{Seq: 1, At: 130, Client: "child-1", Session: "d", Token: 3, Accepted: true})
		}, validate.Fencing},
		{"a child's hold over another's grant", func(ev *runner.Evidence) {
			ev.Holds = []history.Hold{{Client: -1, Lock: "l", Session: "c", Token: 9, From: 45, To: 200}}
		}, validate.LeaseTiming},
		{"two leaders in a term", func(ev *runner.Evidence) {
			ev.Samples = append(ev.Samples, validate.Sample{Round: 1, At: 5, Node: "n2", State: "Leader", Term: 2})
		}, validate.Leaders},
		{"a violation on the timeline", func(ev *runner.Evidence) {
			ev.Events = append(ev.Events, history.Event{At: 2, What: validate.ViolationPrefix + " observe went back"})
		}, validate.Events},
		{"two nodes serving under a lease at once", func(ev *runner.Evidence) {
			ev.Leases = append(ev.Leases, validate.LeaseLine{Node: "n2", Term: 3, From: 1500, Until: 2500})
		}, validate.MasterLease},
		{"a lost grant after the restart", func(ev *runner.Evidence) {
			ev.Durability.Violations, ev.Durability.Details = 1, []string{"l: acquire lost"}
		}, validate.Durability},
		// No evidence is no pass: the same evidence as of a run of every
		// workload leaves the lock workload's checkers with nothing to
		// check, undecided, and --check fails.
		{"every workload, no evidence of the lock workload's guarantees", func(ev *runner.Evidence) {
			ev.Workloads = nil
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeHistory(t, dir, ops)
			ev := clean
			ev.Writes = append([]traffic.Write(nil), clean.Writes...)
			ev.Samples = append([]validate.Sample(nil), clean.Samples...)
			ev.Events = append([]history.Event(nil), clean.Events...)
			tt.breach(&ev)
			if err := runner.SaveEvidence(dir, ev); err != nil {
				t.Fatal(err)
			}
			want := 0
			if tt.checker != "" || ev.Workloads == nil {
				want = 1
			}
			if got := checkHistory(filepath.Join(dir, "history.jsonl"), time.Minute); got != want {
				t.Fatalf("exit %d, want %d (checker %q)", got, want, tt.checker)
			}
			if tt.checker == "" {
				return
			}
			ev.Ops, ev.Dir = ops, dir
			for _, v := range runner.Check(ev) {
				if (v.Checker == tt.checker) != (v.Violations > 0) {
					t.Errorf("%s: %d violations (breached: %s)", v.Checker, v.Violations, tt.checker)
				}
			}
		})
	}
	t.Run("no evidence file", func(t *testing.T) {
		dir := t.TempDir()
		writeHistory(t, dir, ops)
		if got := checkHistory(filepath.Join(dir, "history.jsonl"), time.Minute); got != 0 {
			t.Fatalf("exit %d, want 0", got)
		}
	})
}

func writeHistory(t *testing.T, dir string, ops []history.Op) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	enc := json.NewEncoder(f)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			t.Fatal(err)
		}
	}
}
