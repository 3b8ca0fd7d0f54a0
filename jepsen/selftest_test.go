package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// selfTestCase is one case of TestSelfTest: an unsafe debug switch of
// lockd (or a harness switch), the faults most likely to expose it, and
// the checkers of which at least one must report a violation. A case with
// no catch list is a control: every checker must pass it.
type selfTestCase struct {
	name, debug, faults string
	noFencing           bool
	// unsafeClock allows the clock faults beyond the drift bound.
	unsafeClock bool
	// election runs a classic election mode ("" for Raft).
	election  string
	serveArgs []string
	// d is how long workloads and faults run; 0 for a minute.
	d time.Duration
	// workloads to run; nil for all.
	workloads []string
	// catch lists checkers of which at least one must fail; nil for a
	// control, which every checker must pass.
	catch []string
}

// The lease schedule's window is widest against the election timeout with
// long timeouts, and Raft's own step-down (LeaderLeaseTimeout) must not end
// the old leader's service before its master lease does.
var leaseArgs = []string{"--heartbeat-timeout", "1s", "--election-timeout", "1s", "--leader-lease-timeout", "1s"}

// The late-answer schedule needs the same equality (lockd allows it), and
// the widest window it can get: a heartbeat timeout short against the
// 300-400 ms delay, and no margin or drift allowance taken off the lease.
// A sixth to a half of its cycles catch the old lease rule; four minutes
// run about 55 of them (jepsen/RESULTS.md).
var lateArgs = []string{"--heartbeat-timeout", "600ms", "--election-timeout", "600ms", "--leader-lease-timeout", "600ms",
	"--lease-margin", "1ms", "--max-clock-drift", "0"}

// selfTests is the self-test's table. Files named selftest_*_test.go add
// the cases of the checkers they concern in init functions, so that the
// table reads in file order.
var selfTests = []selfTestCase{
	{name: "grant-held", debug: "grant-held", faults: "none",
		catch: []string{validate.Linearizability, validate.Tokens, validate.LeaseTiming, validate.Fencing}},
	// A deposed or lease-less leader that goes on serving reads without a
	// lease log line: the logs alone show nothing, the master-lease
	// checker's probes do (587 probes at seed 7001).
	{name: "stale-reads", debug: "stale-reads", faults: "partition-leader,pause-leader",
		catch: []string{validate.Linearizability, validate.LeaseTiming, validate.MasterLease}},
	// The plain lock workload alone keeps the log quiet while the lease
	// schedule holds writes back (the fence clients are other processes;
	// abandoned sessions and lock-delays end through entries the leader
	// writes, so the lock-delay workers of Locks kept the log moving and
	// the schedule never lined up: "log not settled" at 4268996).
	{name: "no-boot-wait", debug: "no-boot-wait", faults: "lease-schedule", serveArgs: leaseArgs,
		workloads: []string{traffic.PlainLocks}, catch: []string{validate.Linearizability, validate.LeaseTiming}},
	// The same schedule with the boot wait: nothing to find.
	{name: "boot-wait control", faults: "lease-schedule", serveArgs: leaseArgs, workloads: []string{traffic.PlainLocks}},
	{name: "no-session-grace", debug: "no-session-grace", faults: "kill-leader,pause-leader",
		catch: []string{validate.LeaseTiming, validate.Linearizability}},
	{name: "no-fencing", faults: "pause-client", noFencing: true, catch: []string{validate.Fencing}},
	// A lockd bug the fencing checker must see on its own: lockd now and
	// then grants a token lower than one it granted before (the switch
	// lowers a grant below another lock's current holder, so the lock
	// workload runs beside the fenced one).
	{name: "lower-token-fenced", debug: "lower-token", faults: "none", d: 30 * time.Second,
		workloads: []string{traffic.Locks, traffic.Fenced}, catch: []string{validate.Fencing}},
	// Requests repeated with their first number (a retry, or an abandoned
	// request arriving late) granted anew.
	{name: "forget-seq", debug: "forget-seq", faults: "none", d: 30 * time.Second,
		workloads: []string{traffic.Locks}, catch: []string{validate.RequestNumbers}},
	// The old master lease, which runs from the start of a round and so can
	// count an answer to a heartbeat sent before it, under delayed answers
	// and a cut-off leader.
	{name: "round-lease", debug: "round-lease", faults: "late-answer", serveArgs: lateArgs, d: 5 * time.Minute,
		workloads: []string{traffic.Locks}, catch: []string{validate.Linearizability, validate.LeaseTiming}},
	// The same schedule against lockd's lease: nothing to find.
	{name: "late-answer control", faults: "late-answer", serveArgs: lateArgs, d: 2 * time.Minute,
		workloads: []string{traffic.Locks}},
}

// TestSelfTest runs every case of selfTests and prints a table of which
// checker caught which switch: a harness that cannot catch a known bug
// proves nothing by passing. The cases take one to five minutes each, so
// they run only when LOCKD_JEPSEN_SELFTEST=1; LOCKD_JEPSEN_SELFTEST_RUN
// (a comma-separated list of case names) runs only those, and
// LOCKD_JEPSEN_SELFTEST_SERVE_ARGS adds flags to every lockd serve of the
// Raft cases (to show the checkers catch on the configuration a campaign
// ran, e.g. "--raft-parallel-append").
func TestSelfTest(t *testing.T) {
	if os.Getenv("LOCKD_JEPSEN_SELFTEST") != "1" {
		t.Skip("set LOCKD_JEPSEN_SELFTEST=1 to run the self-test (several minutes)")
	}
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("LOCKD_JEPSEN_SELFTEST_RUN"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			only[n] = true
		}
	}
	var mu sync.Mutex
	var table []string
	row := func(format string, args ...any) {
		mu.Lock()
		table = append(table, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// fired[c] lists the cases whose catch list names checker c and in
	// which c itself reported a violation.
	fired := map[string][]string{}
	t.Cleanup(func() {
		t.Logf("self-test table:\n| case | switch | faults | expected | result |\n|---|---|---|---|---|\n%s",
			strings.Join(table, "\n"))
		var byChecker []string
		for _, c := range checkerNames(t) {
			own := casesFor(c)
			got := "NOT SHOWN"
			if len(fired[c]) > 0 {
				got = strings.Join(fired[c], ", ")
			}
			byChecker = append(byChecker, fmt.Sprintf("| %s | %s | %s |", c, strings.Join(own, ", "), got))
			// With every case run, each checker must have failed in one
			// of its own cases: a case that one of its other checkers
			// caught shows nothing about this one.
			if len(only) == 0 && len(fired[c]) == 0 && !t.Skipped() {
				t.Errorf("checker %s reported no violation in any of its cases (%s)", c, strings.Join(own, ", "))
			}
		}
		t.Logf("by checker:\n| checker | its cases | caught by it in |\n|---|---|---|\n%s", strings.Join(byChecker, "\n"))
	})
	for i, tt := range selfTests {
		if len(only) > 0 && !only[tt.name] {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			sw := tt.debug
			if tt.noFencing {
				sw = "(harness) no fencing"
			}
			if tt.unsafeClock {
				sw = "(harness) --unsafe-clock"
			}
			if tt.election != "" {
				sw = "(harness) --election " + tt.election
			}
			if sw == "" {
				sw = "none (control)"
			}
			expected := "every checker ok"
			if tt.catch != nil {
				expected = "one of " + strings.Join(tt.catch, ", ")
			}
			result := "not run"
			defer func() { row("| %s | %s | %s | %s | %s |", tt.name, sw, tt.faults, expected, result) }()
			workloads := tt.workloads
			if workloads == nil {
				workloads = traffic.All
			}
			d := tt.d
			if d == 0 {
				d = time.Minute
			}
			fps, err := failpoint.Select(tt.faults)
			if err != nil {
				t.Fatal(err)
			}
			serveArgs := tt.serveArgs
			if tt.election == "" || tt.election == "raft" {
				serveArgs = append(slices.Clone(serveArgs), strings.Fields(os.Getenv("LOCKD_JEPSEN_SELFTEST_SERVE_ARGS"))...)
			}
			r := mustRunConfig(t, runner.Config{Nodes: 3, Seed: uint64(7000 + i), Duration: d, Faults: fps, Workloads: workloads,
				UnsafeDebug: tt.debug, NoFencing: tt.noFencing, UnsafeClock: tt.unsafeClock, Election: tt.election, ServeArgs: serveArgs})
			for _, v := range r.Verdicts {
				if v.Violations > 0 && slices.Contains(tt.catch, v.Checker) {
					mu.Lock()
					fired[v.Checker] = append(fired[v.Checker], tt.name)
					mu.Unlock()
				}
			}
			if tt.faults != "none" && r.Faults == 0 {
				result = "no fault injected"
				t.Fatalf("no fault of %s was injected: the case proves nothing", tt.faults)
			}
			if tt.catch == nil {
				var failed []string
				for _, v := range r.Verdicts {
					if !v.OK() {
						failed = append(failed, v.Checker)
						t.Errorf("control: %s: %s\n%s", v.Checker, v, strings.Join(v.Details, "\n"))
					}
				}
				result = "clean"
				if failed != nil {
					result = "FAILED: " + strings.Join(failed, ", ")
				}
				return
			}
			var caught []string
			for _, name := range tt.catch {
				if v, ok := r.Verdict(name); ok && v.Violations > 0 {
					caught = append(caught, fmt.Sprintf("%s (%d)", name, v.Violations))
				}
			}
			if len(caught) == 0 {
				result = "NOT CAUGHT"
				t.Fatalf("%s was not caught by any of %s", tt.name, strings.Join(tt.catch, ", "))
			}
			result = "caught by " + strings.Join(caught, ", ")
			t.Logf("%s %s", tt.name, result)
		})
	}
}

// checkerNames lists the checkers of a run's verdicts (runner.Check), in
// order, without the harness's own verdict on its aimed faults, which
// judges the faults, not lockd.
func checkerNames(t *testing.T) []string {
	var out []string
	for _, v := range runner.Check(runner.Evidence{Dir: t.TempDir(), Durability: validate.Verdict{Checker: validate.Durability}}) {
		if v.Checker != runner.FaultAims {
			out = append(out, v.Checker)
		}
	}
	return out
}

// casesFor lists the self-test cases whose catch list names checker c.
func casesFor(c string) []string {
	var out []string
	for _, tt := range selfTests {
		if slices.Contains(tt.catch, c) {
			out = append(out, tt.name)
		}
	}
	return out
}

// TestSelfTestCoversEveryChecker checks, without running anything, that
// the self-test's table has a case for every checker: a case whose catch
// list names it, so that the full self-test (TestSelfTest) requires that
// checker itself to report a violation in one of them.
func TestSelfTestCoversEveryChecker(t *testing.T) {
	for _, c := range checkerNames(t) {
		if len(casesFor(c)) == 0 {
			t.Errorf("checker %s has no self-test case", c)
		}
	}
}
