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
		fmt.Fprintf(&vs, "\n[%s]\n%s\n", v.Checker, strings.Join(v.Details, "\n"))
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
type Campaign struct {
	Mode, Faults, Command string
	Runs, Ops             int
	Failed                int // runs that could not run
	// Violations counts violations per checker over all runs.
	Violations map[string]int
	Undecided  int
	// Stats sums the workloads' operation counts by kind over all runs,
	// and Injected the faults injected by kind, so that a row shows what
	// the campaign covered.
	Stats, Injected map[string]int
	// Aims sums the aimed faults' cycles, and those that reached their
	// aim, over all runs.
	Aims map[string]failpoint.Aim
}

// Add folds a run into the campaign.
func (c *Campaign) Add(r *runner.Result) {
	if c.Violations == nil {
		c.Violations = map[string]int{}
	}
	if c.Stats == nil {
		c.Stats, c.Injected = map[string]int{}, map[string]int{}
	}
	c.Runs++
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
			c.Undecided++
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
	if c.Undecided > 0 || c.Failed > 0 {
		viol += fmt.Sprintf("; %d undecided verdicts, %d runs failed to run", c.Undecided, c.Failed)
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
	return fmt.Sprintf("| %s | %s | %d | %s | %s | `%s` |", c.Mode, faults, c.Runs, ops, viol, c.Command)
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
