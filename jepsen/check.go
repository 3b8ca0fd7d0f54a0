package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// checkHistory checks a run saved in a directory again: the operations in
// path (history.jsonl) and the rest of the run's evidence in the
// runner.EvidenceFile next to it (holds, timeline, cluster polls, the
// fenced resource's grants and writes, the durability verdict), with every
// checker the run used: runner.Check. Durability alone is not re-run (it
// compared the live cluster before and after a restart): its saved verdict
// is reported again. A history without an evidence file (an older run's)
// is checked for linearizability and tokens only, and the output says so.
// The visualization goes next to the file. It returns the exit status: 0
// clean, 1 violations or undecided, 2 unreadable.
func checkHistory(path string, timeout time.Duration) int {
	ops, err := readHistory(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	dir := filepath.Dir(path)
	var verdicts []validate.Verdict
	ev, err := runner.LoadEvidence(dir)
	switch {
	case err == nil:
		ev.Ops, ev.Dir, ev.LinearizeTimeout = ops, dir, timeout
		ev.Durability.Details = append(ev.Durability.Details, "(verdict saved by the run: durability is checked on the live cluster)")
		verdicts = runner.Check(ev)
		fmt.Printf("%s: %d operations, evidence from %s\n", path, len(ops), runner.EvidenceFile)
	case errors.Is(err, fs.ErrNotExist):
		skip := map[string]bool{traffic.FencedLock: true} // its holders are partly child processes
		verdicts = []validate.Verdict{
			validate.CheckLinearizable(ops, skip, timeout, dir),
			validate.CheckTokens(ops, nil),
		}
		fmt.Printf("%s: %d operations; no %s next to it: linearizability and tokens only\n", path, len(ops), runner.EvidenceFile)
	default:
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	exit := 0
	for _, v := range verdicts {
		fmt.Println("  ", v)
		for _, d := range v.Details {
			fmt.Println("     ", d)
		}
		if !v.OK() {
			exit = 1
		}
	}
	return exit
}

// readHistory reads one history.Op per line.
func readHistory(path string) ([]history.Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var ops []history.Op
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var op history.Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("%s: no operations", path)
	}
	return ops, nil
}
