package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/validate"
)

// TestPrint_ShowsEveryViolation checks that a run with one violation a
// workload saw on its own prints it, without the timeline, and that the
// campaign row counts it.
func TestPrint_ShowsEveryViolation(t *testing.T) {
	what := "VIOLATION observe went back: token 7 after 9"
	ev := runner.Evidence{
		Events:     []history.Event{{At: 5e8, What: what}},
		Durability: validate.Verdict{Checker: validate.Durability},
		Leases:     []validate.LeaseLine{{Node: "n1", Term: 2, From: 1e9, Until: 2e9}},
		Dir:        t.TempDir(),
	}
	r := &runner.Result{Seed: 1, Verdicts: runner.Check(ev)}
	var b strings.Builder
	Print(&b, r, false)
	if out := b.String(); !strings.Contains(out, what) || !strings.Contains(out, "FAIL") {
		t.Errorf("report does not show the violation as a failure:\n%s", out)
	}
	c := &Campaign{}
	c.Add(r)
	if row := c.Row(); !strings.Contains(row, "| 1 (events 1) |") {
		t.Errorf("campaign row does not count the violation: %s", row)
	}
}

// TestCampaign_RowShowsCoverage checks that a campaign row sums the
// workloads' operation kinds and the faults injected by kind over runs,
// and ignores failed injections.
func TestCampaign_RowShowsCoverage(t *testing.T) {
	c := &Campaign{Mode: "raft", Faults: "all", Command: "go run ./jepsen"}
	c.Add(&runner.Result{Ops: 10, Stats: map[string]int{"acquire": 4, "hand-offs": 1},
		Events: []history.Event{{What: "inject kill-leader: killed n1"}, {What: "inject pause-node failed: no node"},
			{What: "heal kill-leader"}}})
	c.Add(&runner.Result{Ops: 5, Stats: map[string]int{"acquire": 2, "stale reads": 3},
		Events: []history.Event{{What: "inject kill-leader: killed n2"}, {What: "inject delay-node: n3 300ms"}}})
	want := "| raft | all; injected: delay-node 1, kill-leader 2 | 2 | 15 (acquire 6, hand-offs 1, stale reads 3) | 0 |"
	if row := c.Row(); !strings.HasPrefix(row, want) {
		t.Errorf("row = %s\nwant prefix %s", row, want)
	}
}

// TestCampaign_RowShowsAims checks that a run's output and the campaign
// row say how many cycles of an aimed fault reached their aim, that only
// those count as injected, and that a run in which none did is undecided,
// not passed.
func TestCampaign_RowShowsAims(t *testing.T) {
	c := &Campaign{Mode: "raft", Faults: "late-answer", Command: "go run ./jepsen"}
	for _, a := range []failpoint.Aim{{Cycles: 5, Reached: 4}, {Cycles: 3, Reached: 0}} {
		aims := map[string]failpoint.Aim{"late-answer": a}
		r := &runner.Result{Aims: aims, Verdicts: []validate.Verdict{runner.CheckAims(aims)}}
		for i := range a.Cycles {
			what := "inject late-answer: n1 cut off; aim reached"
			if i >= a.Reached {
				what = "inject late-answer: n1 cut off; aim NOT reached: n1 no longer leads before it is cut off"
			}
			r.Events = append(r.Events, history.Event{What: what})
		}
		var b strings.Builder
		Print(&b, r, false)
		line := fmt.Sprintf("late-answer: aim reached %d of %d cycles", a.Reached, a.Cycles)
		if out := b.String(); !strings.Contains(out, line) {
			t.Errorf("run output lacks %q:\n%s", line, out)
		}
		if got := r.Verdicts[0].Undecided != ""; got != (a.Reached == 0) {
			t.Errorf("%v: undecided = %v, want %v", a, got, a.Reached == 0)
		}
		c.Add(r)
	}
	row := c.Row()
	for _, want := range []string{"injected: late-answer 4;", "aims: late-answer reached 4 of 8 cycles", "1 undecided verdicts"} {
		if !strings.Contains(row, want) {
			t.Errorf("row lacks %q: %s", want, row)
		}
	}
}
