package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// evidence is a clean run's evidence: one lock taken and given back, a
// fenced log that only grew, one leader, a durability check that passed.
func evidence(t *testing.T) Evidence {
	return Evidence{
		Ops: []history.Op{
			{ID: 1, Lock: "l", Kind: history.Acquire, Session: "s1", Token: 5, Status: history.OK, Call: 0, Return: 10},
			{ID: 2, Lock: "l", Kind: history.Release, Session: "s1", Status: history.OK, Call: 20, Return: 30},
		},
		Events:     []history.Event{{At: 0, What: "cluster of 3 up"}},
		Durability: validate.Verdict{Checker: validate.Durability},
		Samples:    []validate.Sample{{Node: "n1", State: "Leader", Term: 2}, {Node: "n2", State: "Follower", Term: 2}},
		Leases:     []validate.LeaseLine{{Node: "n1", Term: 2, From: 1e9, Until: 2e9}},
		Dir:        t.TempDir(),
	}
}

// TestCheck_EveryViolationCounts checks that a violation a workload
// recorded on the timeline while the run went on (Observe delivering an
// older token) fails the run like any checker's: it is counted, named in
// the verdicts, and a clean run stays clean.
func TestCheck_EveryViolationCounts(t *testing.T) {
	observe := "VIOLATION observe went back: token 7 after 9"
	tests := []struct {
		name   string
		events []string
		want   int // violations over all verdicts
	}{
		{"clean run", nil, 0},
		{"one observe violation", []string{observe}, 1},
		{"two", []string{observe, "VIOLATION observe went back: token 3 after 9"}, 2},
		{"word inside a line is no violation", []string{"heal all: no VIOLATION here"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := evidence(t)
			for i, e := range tt.events {
				ev.Events = append(ev.Events, history.Event{At: int64(100 + i), What: e})
			}
			r := &Result{Verdicts: Check(ev)}
			total, details := 0, ""
			for _, v := range r.Verdicts {
				total += v.Violations
				if v.Violations > 0 {
					details += strings.Join(v.Details, "\n")
				}
			}
			if total != tt.want {
				t.Fatalf("%d violations counted, want %d: %v", total, tt.want, r.Verdicts)
			}
			if failed := r.Violations() > 0; failed != (tt.want > 0) {
				t.Fatalf("run failed = %v with %d violations", failed, tt.want)
			}
			for _, e := range tt.events {
				if strings.HasPrefix(e, "VIOLATION") && !strings.Contains(details, e) {
					t.Errorf("failing verdicts do not name %q:\n%s", e, details)
				}
			}
		})
	}
}

// TestCheck_ElectionValues checks that the workload's election is checked
// with its values: a leader read that misses an acknowledged proclaim
// fails linearizability.
func TestCheck_ElectionValues(t *testing.T) {
	e := traffic.ElectionName
	for _, seen := range []string{"v2", "v1"} {
		ev := evidence(t)
		ev.Ops = append(ev.Ops,
			history.Op{ID: 3, Lock: e, Kind: history.Acquire, Session: "s2", Value: "v1", Token: 7, Status: history.OK, Call: 40, Return: 50},
			history.Op{ID: 4, Lock: e, Kind: history.Proclaim, Session: "s2", Value: "v2", Status: history.OK, Call: 60, Return: 70},
			history.Op{ID: 5, Client: 9, Lock: e, Kind: history.Read, Holder: "s2", Token: 7, Value: seen, Status: history.OK, Call: 80, Return: 90})
		v, _ := (&Result{Verdicts: Check(ev)}).Verdict(validate.Linearizability)
		if want := seen == "v1"; (v.Violations > 0) != want {
			t.Errorf("read sees %q after proclaim v2: %d violations (%v)", seen, v.Violations, v.Details)
		}
	}
}

// TestCheck_ChildGrantsOrderedAgainstOtherLocks checks that the run hands
// the tokens checker the child fence clients' grants with their windows:
// a child granted the fenced lock with token 3 after lock l's token 5 was
// acknowledged fails tokens (it passed every checker before).
func TestCheck_ChildGrantsOrderedAgainstOtherLocks(t *testing.T) {
	for _, tok := range []uint64{3, 9} {
		ev := evidence(t)
		ev.Fenced = true
		ev.Grants = []traffic.Grant{{Client: "child-0", Session: "c", Token: tok, Call: 40, Return: 50, Child: true}}
		v, _ := (&Result{Verdicts: Check(ev)}).Verdict(validate.Tokens)
		if want := tok < 5; (v.Violations > 0) != want {
			t.Errorf("child granted token %d after token 5: %s %v", tok, v, v.Details)
		}
	}
}

// TestCheck_StaleReadsDuringTheRun checks that the run hands the
// stale-reads checker the writes acknowledged during the run, the polls
// and the fault windows: a read behind what its node said it had applied,
// under a fault, fails stale-reads.
func TestCheck_StaleReadsDuringTheRun(t *testing.T) {
	const s = int64(time.Second)
	for _, index := range []uint64{30, 50} {
		ev := evidence(t)
		ev.StaleReads = []history.StaleRead{{Node: "n2", Proc: 2, Lock: "l", Index: index, Call: 5 * s, Return: 5*s + 10}}
		ev.Acks = []history.Ack{{Lock: "l", Index: 50, Return: 1 * s, Run: true}}
		ev.Samples = append(ev.Samples, validate.Sample{Node: "n2", Proc: 2, At: 2*s - 10, Return: 2 * s, Leader: "n1", Applied: 60})
		ev.Faults = []validate.FaultWindow{{Kind: "partition-node", From: s / 2, To: 6 * s}}
		v, _ := (&Result{Verdicts: Check(ev)}).Verdict(validate.StaleReads)
		if want := index < 50; (v.Violations > 0) != want || v.Checked == 0 {
			t.Errorf("read of index %d: %s %v", index, v, v.Details)
		}
	}
}

// TestRunFailsWithoutTools checks that a run asked for a fault whose tool
// the host lacks fails before it starts anything, with the reason, instead
// of passing with the fault as a timeline note.
func TestRunFailsWithoutTools(t *testing.T) {
	fs, err := failpoint.Select("iptables-split")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "")
	r := Run(Config{Binary: "/nonexistent/lockd", Nodes: 3, Duration: time.Second, Faults: fs, Dir: t.TempDir()})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "iptables-split") {
		t.Fatalf("run error = %v, want one naming iptables-split", r.Err)
	}
}

// TestCheck_LeaseProbes checks that the master-lease verdict has the
// probes as an outside witness: a probe n1 answered inside its logged
// lease is clean, one n2 answered with no line in its log is a violation,
// and the saved evidence keeps the probes for a re-check.
func TestCheck_LeaseProbes(t *testing.T) {
	for _, tt := range []struct {
		probe validate.LeaseProbe
		want  int
	}{
		{validate.LeaseProbe{Node: "n1", Sent: 15e8, Answered: 15e8 + 2e6}, 0},
		{validate.LeaseProbe{Node: "n2", Sent: 15e8, Answered: 15e8 + 2e6}, 1},
	} {
		ev := evidence(t)
		ev.Probes = []validate.LeaseProbe{tt.probe}
		if err := SaveEvidence(ev.Dir, ev); err != nil {
			t.Fatal(err)
		}
		saved, err := LoadEvidence(ev.Dir)
		if err != nil {
			t.Fatal(err)
		}
		saved.Ops, saved.Dir = ev.Ops, ev.Dir
		v, _ := (&Result{Verdicts: Check(saved)}).Verdict(validate.MasterLease)
		if v.Violations != tt.want {
			t.Errorf("probe %+v: %d violations, want %d: %v", tt.probe, v.Violations, tt.want, v.Details)
		}
	}
}

// TestCheck_EtcdWorkloadNeedsItsEvidence: a run of the etcd workload is
// undecided unless its client recorded a Mutex grant, a campaign won, and
// a read of each holder; lease timing is off when it ran alone.
func TestCheck_EtcdWorkloadNeedsItsEvidence(t *testing.T) {
	m, e := traffic.EtcdMutexName, traffic.EtcdElectionName
	full := []history.Op{
		{ID: 11, Lock: m, Kind: history.Acquire, Session: "etcd-1", Token: 5, Status: history.OK, Call: 0, Return: 10},
		{ID: 12, Lock: m, Kind: history.Read, Holder: "etcd-1", Token: 5, Status: history.OK, Call: 11, Return: 12},
		{ID: 13, Lock: e, Kind: history.Acquire, Session: "etcd-2", Value: "v", Token: 7, Status: history.OK, Call: 20, Return: 30},
		{ID: 14, Lock: e, Kind: history.Read, Holder: "etcd-2", Token: 7, Value: "v", Status: history.OK, Call: 31, Return: 32},
	}
	for drop := -1; drop < len(full); drop++ {
		ev := evidence(t)
		ev.Workloads = []string{traffic.Etcd}
		ev.Ops = nil
		for i, op := range full {
			if i != drop {
				ev.Ops = append(ev.Ops, op)
			}
		}
		r := &Result{Verdicts: Check(ev)}
		lin, _ := r.Verdict(validate.Linearizability)
		if undecided := lin.Undecided != ""; undecided != (drop >= 0) {
			t.Errorf("without op %d: linearizability undecided %q", drop, lin.Undecided)
		}
		if lt, _ := r.Verdict(validate.LeaseTiming); lt.Off == "" {
			t.Errorf("lease timing in force in a run of the etcd workload alone: %v", lt)
		}
	}
}

// TestWithoutEtcd: the etcd workload stays in a Raft run with its child
// built, and is left out, with the reason, of a classic or secured run or
// one without the child.
func TestWithoutEtcd(t *testing.T) {
	all := []string{traffic.Locks, traffic.Etcd}
	for _, tt := range []struct {
		cfg  Config
		keep bool
		why  string
	}{
		{Config{Workloads: all, EtcdClient: "/bin/etcdclient"}, true, ""},
		{Config{Workloads: all, EtcdClient: "/bin/etcdclient", Election: "raft"}, true, ""},
		{Config{Workloads: all, EtcdClient: "/bin/etcdclient", Election: "bully"}, false, "bully mode"},
		{Config{Workloads: all, EtcdClient: "/bin/etcdclient", Secure: true}, false, "TLS"},
		{Config{Workloads: all}, false, "no etcd client"},
		{Config{Workloads: []string{traffic.Locks}}, false, ""},
	} {
		got, note := withoutEtcd(tt.cfg)
		if kept := len(got) == 2; kept != tt.keep || !strings.Contains(note, tt.why) || (tt.why == "") != (note == "") || got[0] != traffic.Locks {
			t.Errorf("%+v: workloads %v, note %q; want kept %v, a note naming %q", tt.cfg, got, note, tt.keep, tt.why)
		}
	}
	if cfg := (Config{Workloads: all, Election: "ring"}); len(all) != 2 || func() bool { withoutEtcd(cfg); return all[1] != traffic.Etcd }() {
		t.Error("withoutEtcd changed its caller's list")
	}
}
