package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// TestSelfTest enables one unsafe debug switch of lockd (or turns fencing
// off) per case, with the faults most likely to expose it, and requires
// the checkers named for it to report a violation: a harness that cannot
// catch a known bug proves nothing by passing. The cases take about a
// minute each, so they run only when LOCKD_JEPSEN_SELFTEST=1.
func TestSelfTest(t *testing.T) {
	if os.Getenv("LOCKD_JEPSEN_SELFTEST") != "1" {
		t.Skip("set LOCKD_JEPSEN_SELFTEST=1 to run the self-test (several minutes)")
	}
	// The lease schedule's window is widest against the election timeout
	// with long timeouts, and Raft's own step-down (LeaderLeaseTimeout)
	// must not end the old leader's service before its master lease does.
	leaseArgs := []string{"--heartbeat-timeout", "1s", "--election-timeout", "1s", "--leader-lease-timeout", "1s"}
	// The late-answer schedule needs the same equality (lockd allows it),
	// and the widest window it can get: a heartbeat timeout short against
	// the 300-400 ms delay, and no margin or drift allowance taken off the
	// lease. A sixth to a half of its cycles catch the old lease rule;
	// four minutes run about 55 of them (jepsen/RESULTS.md).
	lateArgs := []string{"--heartbeat-timeout", "600ms", "--election-timeout", "600ms", "--leader-lease-timeout", "600ms",
		"--lease-margin", "1ms", "--max-clock-drift", "0"}
	tests := []struct {
		name, debug, faults string
		noFencing           bool
		serveArgs           []string
		// d is how long workloads and faults run; 0 for a minute.
		d time.Duration
		// workloads to run; nil for all. The lock workload alone keeps
		// the log quiet while the lease schedule holds writes back (the
		// fence clients are other processes, and abandoned sessions
		// expire through the leader).
		workloads []string
		// catch lists checkers of which at least one must fail; nil for
		// a control, which every checker must pass.
		catch []string
	}{
		{"grant-held", "grant-held", "none", false, nil, 0, nil,
			[]string{validate.Linearizability, validate.Tokens, validate.LeaseTiming, validate.Fencing}},
		{"stale-reads", "stale-reads", "partition-leader,pause-leader", false, nil, 0, nil,
			[]string{validate.Linearizability, validate.LeaseTiming}},
		{"no-boot-wait", "no-boot-wait", "lease-schedule", false, leaseArgs, 0, []string{traffic.Locks},
			[]string{validate.Linearizability, validate.LeaseTiming}},
		// The same schedule with the boot wait: nothing to find.
		{"boot-wait control", "", "lease-schedule", false, leaseArgs, 0, []string{traffic.Locks}, nil},
		{"no-session-grace", "no-session-grace", "kill-leader,pause-leader", false, nil, 0, nil,
			[]string{validate.LeaseTiming, validate.Linearizability}},
		{"no-fencing", "", "pause-client", true, nil, 0, nil, []string{validate.Fencing}},
		// The old master lease, which runs from the start of a round and
		// so can count an answer to a heartbeat sent before it, under
		// delayed answers and a cut-off leader.
		{"round-lease", "round-lease", "late-answer", false, lateArgs, 5 * time.Minute, []string{traffic.Locks},
			[]string{validate.Linearizability, validate.LeaseTiming}},
		// The same schedule against lockd's lease: nothing to find.
		{"late-answer control", "", "late-answer", false, lateArgs, 2 * time.Minute, []string{traffic.Locks}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workloads := tt.workloads
			if workloads == nil {
				workloads = traffic.All
			}
			d := tt.d
			if d == 0 {
				d = time.Minute
			}
			r := mustRunWorkloads(t, workloads, uint64(7000+i), d, tt.faults, tt.debug, tt.noFencing, tt.serveArgs...)
			if tt.faults != "none" && r.Faults == 0 {
				t.Fatalf("no fault of %s was injected: the case proves nothing", tt.faults)
			}
			if tt.catch == nil {
				for _, v := range r.Verdicts {
					if !v.OK() {
						t.Errorf("control: %s: %s\n%s", v.Checker, v, strings.Join(v.Details, "\n"))
					}
				}
				return
			}
			var caught []string
			for _, name := range tt.catch {
				if v, ok := r.Verdict(name); ok && v.Violations > 0 {
					caught = append(caught, name)
				}
			}
			if len(caught) == 0 {
				t.Fatalf("%s was not caught by any of %s", tt.name, strings.Join(tt.catch, ", "))
			}
			t.Logf("%s caught by %s", tt.name, strings.Join(caught, ", "))
		})
	}
}
