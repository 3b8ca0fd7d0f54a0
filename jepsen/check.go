package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// checkHistory checks a history a run saved (history.jsonl) again, with
// the checkers that need nothing but the operations: linearizability and
// tokens. The visualization goes next to the file. It returns the exit
// status: 0 clean, 1 violations or undecided, 2 unreadable.
func checkHistory(path string, timeout time.Duration) int {
	ops, err := readHistory(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	skip := map[string]bool{traffic.FencedLock: true} // its holders are partly child processes
	verdicts := []validate.Verdict{
		validate.CheckLinearizable(ops, skip, timeout, filepath.Dir(path)),
		validate.CheckTokens(ops, nil),
	}
	exit := 0
	fmt.Printf("%s: %d operations\n", path, len(ops))
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
	defer f.Close()
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
