package report

import (
	"fmt"
	"os"
	"path/filepath"
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
	if row := c.Row(); !strings.Contains(row, "| 1 (events 1); ") {
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
	want := "| raft | all; injected: delay-node 1, kill-leader 2 | 2 | 15 (acquire 6, hand-offs 1, stale reads 3) | 0; 0 undecided runs |"
	if row := c.Row(); !strings.HasPrefix(row, want) {
		t.Errorf("row = %s\nwant prefix %s", row, want)
	}
}

// verdicts returns a run's verdicts: fifo with what it checked (or
// undecided when pairs is 0), fencing not in force.
func verdicts(pairs int) []validate.Verdict {
	fifo := validate.Verdict{Checker: validate.FIFO, Checked: pairs, Unit: "ordered pairs of waiters",
		Coverage: fmt.Sprintf("%d ordered pairs of waiters", pairs)}
	if pairs == 0 {
		fifo.Undecided = "no ordered pair of waiters"
	}
	off := validate.Verdict{Checker: validate.Fencing}.NotInForce("the fenced workload was not run")
	return []validate.Verdict{fifo, off}
}

// TestPrint_ShowsCoverage checks that every verdict line says what its
// checker checked, or why it was not in force, and that the verdicts file
// says it too.
func TestPrint_ShowsCoverage(t *testing.T) {
	r := &runner.Result{Seed: 1, Dir: t.TempDir(), Verdicts: verdicts(435)}
	var b strings.Builder
	Print(&b, r, false)
	for _, want := range []string{"fifo             ok: checked 435 ordered pairs of waiters", "fencing          off (the fenced workload was not run)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if err := Write(r, nil); err != nil {
		t.Fatal(err)
	}
	vs, err := os.ReadFile(filepath.Join(r.Dir, "verdicts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[fifo]\nchecked 435 ordered pairs of waiters", "[fencing]\nnot in force: the fenced workload was not run"} {
		if !strings.Contains(string(vs), want) {
			t.Errorf("verdicts.txt lacks %q:\n%s", want, vs)
		}
	}
}

// TestCampaign_UndecidedFailsUnlessDecidedOnRerun checks the campaign's
// rule for undecided verdicts: an undecided run fails the campaign unless
// its re-run decides with no violation, and the row says how many runs
// were undecided, how the re-runs went, and what each checker in force
// checked (a checker not in force is left out).
func TestCampaign_UndecidedFailsUnlessDecidedOnRerun(t *testing.T) {
	decided := &runner.Result{Ops: 10, Verdicts: verdicts(400)}
	undecided := &runner.Result{Ops: 10, Verdicts: verdicts(0)}
	violated := &runner.Result{Ops: 10, Verdicts: verdicts(35)}
	violated.Verdicts[0].Violations = 1
	tests := []struct {
		name   string
		runs   []*runner.Result // each run, with its re-run after it if undecided
		passed bool
		row    string
	}{
		{"decided", []*runner.Result{decided, decided}, true,
			"| 2 | 20 | 0; 0 undecided runs; checkers in force, with what they checked: fifo 800 ordered pairs of waiters |"},
		{"undecided, decided on re-run", []*runner.Result{decided, undecided, decided}, true,
			"| 2 (+1 re-run) | 30 | 0; 1 undecided runs (fifo 1; 1 re-run: 1 decided clean, 0 still undecided); checkers in force, with what they checked: fifo 800 ordered pairs of waiters |"},
		{"undecided twice", []*runner.Result{undecided, undecided}, false,
			"| 1 (+1 re-run) | 20 | 0; 1 undecided runs (fifo 2; 1 re-run: 0 decided clean, 1 still undecided); checkers in force, with what they checked: fifo 0 ordered pairs of waiters |"},
		{"undecided, a violation on re-run", []*runner.Result{undecided, violated}, false,
			"| 1 (+1 re-run) | 20 | 1 (fifo 1); 1 undecided runs (fifo 1; 1 re-run: 0 decided clean, 0 still undecided); checkers in force, with what they checked: fifo 35 ordered pairs of waiters |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Campaign{}
			for i := 0; i < len(tt.runs); i++ {
				c.Add(tt.runs[i])
				if !Decided(tt.runs[i]) {
					i++
					c.AddRerun(tt.runs[i])
				}
			}
			if c.Passed() != tt.passed {
				t.Errorf("passed = %v, want %v", c.Passed(), tt.passed)
			}
			if row := c.Row(); !strings.Contains(row, tt.row) {
				t.Errorf("row = %s\nwant it to contain %s", row, tt.row)
			}
		})
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
	for _, want := range []string{"injected: late-answer 4;", "aims: late-answer reached 4 of 8 cycles", "1 undecided runs"} {
		if !strings.Contains(row, want) {
			t.Errorf("row lacks %q: %s", want, row)
		}
	}
}
