// Package report prints a run's outcome for people and writes its files:
// the fault timeline, the verdicts with their details, and the history as
// JSON lines (porcupine's HTML is written by the linearizability checker).
// It also renders a campaign's row for RESULTS.md.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/runner"
)

// Print writes a run's seed, fault timeline and one line per checker,
// with the details of every checker that found a violation or could not
// decide. A run that failed to run still shows the verdicts it reached.
func Print(w io.Writer, r *runner.Result, timeline bool) {
	fmt.Fprintf(w, "== run seed %d (%s, %d ops, %d faults, %s)\n", r.Seed, r.Dir, r.Ops, r.Faults, r.Elapsed.Round(1e8))
	if r.Err != nil {
		fmt.Fprintf(w, "   run failed: %v\n", r.Err)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Aims)) {
		fmt.Fprintf(w, "   %s: aim %s\n", name, r.Aims[name])
	}
	if timeline {
		for _, e := range r.Events {
			fmt.Fprintf(w, "   %9s  %s\n", history.Seconds(e.At), e.What)
		}
	}
	for _, v := range r.Verdicts {
		fmt.Fprintf(w, "   %s\n", v)
		if !v.OK() {
			for _, d := range v.Details {
				fmt.Fprintf(w, "      %s\n", d)
			}
			if v.Artifact != "" {
				fmt.Fprintf(w, "      see %s\n", v.Artifact)
			}
		}
	}
}

// Write stores the run's timeline, verdicts and history in its directory.
func Write(r *runner.Result, ops []history.Op) error {
	var tl strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&tl, "%9s  %s\n", history.Seconds(e.At), e.What)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "timeline.txt"), []byte(tl.String()), 0o600); err != nil {
		return err
	}
	var vs strings.Builder
	Print(&vs, r, false)
	for _, v := range r.Verdicts {
		fmt.Fprintf(&vs, "\n[%s]\n", v.Checker)
		switch {
		case v.Off != "":
			fmt.Fprintf(&vs, "not in force: %s\n", v.Off)
		case v.Undecided != "":
			fmt.Fprintf(&vs, "undecided: %s\n", v.Undecided)
		}
		if v.Coverage != "" {
			fmt.Fprintf(&vs, "checked %s\n", v.Coverage)
		}
		if len(v.Details) > 0 {
			fmt.Fprintf(&vs, "%s\n", strings.Join(v.Details, "\n"))
		}
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "verdicts.txt"), []byte(vs.String()), 0o600); err != nil {
		return err
	}
	if ops == nil {
		return nil
	}
	f, err := os.Create(filepath.Join(r.Dir, "history.jsonl"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			_ = f.Close() // the write error is the one to report
			return err
		}
	}
	return f.Close() // a history cut short on close would be checked as if whole
}

// Campaign sums up several runs.
//
// An undecided verdict fails a campaign like a violation, unless the run
// is repeated and decided: a run that found no violation but left a
// checker undecided is run again once with the same seed (AddRerun), and
// counts as failed only if that run does not decide cleanly either.
type Campaign struct {
	Mode, Faults, Command string
	Runs, Ops             int
	Failed                int // runs that could not run
	// Violations counts violations per checker over all runs.
	Violations map[string]int
	// Undecided counts undecided verdicts per checker over all runs (the
	// re-runs' among them); UndecidedRuns counts the runs with one.
	Undecided     map[string]int
	UndecidedRuns int
	// Reruns counts the re-runs of undecided runs, Redecided those that
	// decided with no violation, StillUndecided those that did not decide.
	Reruns, Redecided, StillUndecided int
	// Stats sums the workloads' operation counts by kind over all runs,
	// and Injected the faults injected by kind, so that a row shows what
	// the campaign covered.
	Stats, Injected map[string]int
	// Checked sums each checker in force's coverage (Verdict.Checked)
	// over the runs, in Units; a checker Off in every run has none.
	Checked map[string]int
	Units   map[string]string
	// Aims sums the aimed faults' cycles, and those that reached their
	// aim, over all runs.
	Aims map[string]failpoint.Aim
}

// Decided reports whether a run decided: no verdict undecided.
func Decided(r *runner.Result) bool {
	for _, v := range r.Verdicts {
		if v.Undecided != "" {
			return false
		}
	}
	return true
}

// Passed reports whether the campaign passed: every run ran, no checker
// found a violation, and every undecided run was decided by its re-run.
func (c *Campaign) Passed() bool {
	total := 0
	for _, n := range c.Violations {
		total += n
	}
	return total == 0 && c.Failed == 0 && c.UndecidedRuns == c.Redecided
}

// Add folds a run into the campaign.
func (c *Campaign) Add(r *runner.Result) {
	c.Runs++
	c.fold(r)
	if r.Err == nil && !Decided(r) {
		c.UndecidedRuns++
	}
}

// AddRerun folds in the re-run of an undecided run: its violations and
// coverage count like any run's; it decides the first run if it decided
// with no violation and ran.
func (c *Campaign) AddRerun(r *runner.Result) {
	c.Reruns++
	c.fold(r)
	switch {
	case r.Err == nil && r.Violations() == 0 && Decided(r):
		c.Redecided++
	case r.Err == nil && !Decided(r):
		c.StillUndecided++
	}
}

// fold adds a run's operations, faults, verdicts and coverage.
func (c *Campaign) fold(r *runner.Result) {
	if c.Violations == nil {
		c.Violations, c.Undecided = map[string]int{}, map[string]int{}
	}
	if c.Stats == nil {
		c.Stats, c.Injected = map[string]int{}, map[string]int{}
	}
	if c.Checked == nil {
		c.Checked, c.Units = map[string]int{}, map[string]string{}
	}
	c.Ops += r.Ops
	for k, n := range r.Stats {
		c.Stats[k] += n
	}
	for _, e := range r.Events {
		// The schedule records each injection as "inject KIND: what"; a
		// cycle of an aimed fault that missed its aim says so at the end,
		// and is counted in Aims, not as injected.
		if strings.Contains(e.What, "; aim NOT reached: ") {
			continue
		}
		if rest, ok := strings.CutPrefix(e.What, "inject "); ok {
			if kind, _, ok := strings.Cut(rest, ": "); ok && !strings.Contains(kind, " ") {
				c.Injected[kind]++
			}
		}
	}
	for name, a := range r.Aims {
		if c.Aims == nil {
			c.Aims = map[string]failpoint.Aim{}
		}
		t := c.Aims[name]
		t.Cycles, t.Reached = t.Cycles+a.Cycles, t.Reached+a.Reached
		c.Aims[name] = t
	}
	if r.Err != nil {
		c.Failed++
	}
	for _, v := range r.Verdicts {
		c.Violations[v.Checker] += v.Violations
		if v.Undecided != "" {
			c.Undecided[v.Checker]++
		}
		if v.Off == "" {
			c.Checked[v.Checker] += v.Checked
			if c.Units[v.Checker] == "" {
				c.Units[v.Checker] = v.Unit
			}
		}
	}
}

// Row renders the campaign as a RESULTS.md table row.
func (c *Campaign) Row() string {
	var names []string
	total := 0
	for n, k := range c.Violations {
		total += k
		if k > 0 {
			names = append(names, fmt.Sprintf("%s %d", n, k))
		}
	}
	sort.Strings(names)
	viol := fmt.Sprint(total)
	if len(names) > 0 {
		viol += " (" + strings.Join(names, ", ") + ")"
	}
	viol += fmt.Sprintf("; %d undecided runs", c.UndecidedRuns)
	if c.UndecidedRuns > 0 {
		viol += fmt.Sprintf(" (%s; %d re-run: %d decided clean, %d still undecided)",
			counts(c.Undecided), c.Reruns, c.Redecided, c.StillUndecided)
	}
	if c.Failed > 0 {
		viol += fmt.Sprintf("; %d runs failed to run", c.Failed)
	}
	if len(c.Checked) > 0 {
		viol += "; checkers in force, with what they checked: " + c.coverage()
	}
	runs := fmt.Sprint(c.Runs)
	if c.Reruns > 0 {
		runs += fmt.Sprintf(" (+%d re-run)", c.Reruns)
	}
	ops := fmt.Sprint(c.Ops)
	if len(c.Stats) > 0 {
		ops += " (" + counts(c.Stats) + ")"
	}
	faults := c.Faults
	if len(c.Injected) > 0 {
		faults += "; injected: " + counts(c.Injected)
	}
	if len(c.Aims) > 0 {
		var aims []string
		for _, name := range slices.Sorted(maps.Keys(c.Aims)) {
			aims = append(aims, fmt.Sprintf("%s %s", name, c.Aims[name]))
		}
		faults += "; aims: " + strings.Join(aims, ", ")
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | `%s` |", c.Mode, faults, runs, ops, viol, c.Command)
}

// coverage renders each checker in force with the sum of what it checked,
// sorted by checker.
func (c *Campaign) coverage() string {
	var keys []string
	for k := range c.Checked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d %s", k, c.Checked[k], c.Units[k]))
	}
	return strings.Join(parts, ", ")
}

// counts renders a count per kind as "a 3, b 10", sorted by kind.
func counts(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
