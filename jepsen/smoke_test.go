package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/report"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// TestMain lets the test binary serve as the child fence client, which the
// harness starts by re-executing itself.
func TestMain(m *testing.M) {
	if traffic.IsFenceClient() {
		os.Exit(traffic.RunFenceClient())
	}
	os.Exit(m.Run())
}

// built builds a binary once per test binary, into a directory of its
// own.
type built struct {
	once sync.Once
	path string
	err  error
}

func (b *built) must(t *testing.T, build func(dir string) (string, error)) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "lockd-jepsen-test-")
		if err != nil {
			b.err = err
			return
		}
		b.path, b.err = build(dir)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// lockdBin is lockd built with the unsafe switches, and etcdClient the
// etcd workload's child.
var lockdBin, etcdClient built

// mustBuild builds lockd once per test binary.
func mustBuild(t *testing.T) string { return lockdBin.must(t, proccluster.Build) }

// mustRun runs one harness run of every workload and logs its report.
func mustRun(t *testing.T, seed uint64, d time.Duration, faults, unsafeDebug string, noFencing bool, serveArgs ...string) *runner.Result {
	t.Helper()
	return mustRunWorkloads(t, traffic.All, seed, d, faults, unsafeDebug, noFencing, false, serveArgs...)
}

// mustRunWorkloads is mustRun with a choice of workloads, and of the clock
// faults beyond the drift bound (unsafeClock).
func mustRunWorkloads(t *testing.T, workloads []string, seed uint64, d time.Duration, faults, unsafeDebug string,
	noFencing, unsafeClock bool, serveArgs ...string) *runner.Result {
	t.Helper()
	fps, err := failpoint.Select(faults)
	if err != nil {
		t.Fatal(err)
	}
	return mustRunConfig(t, runner.Config{Nodes: 3, Seed: seed, Duration: d, Faults: fps, Workloads: workloads,
		UnsafeDebug: unsafeDebug, NoFencing: noFencing, UnsafeClock: unsafeClock, ServeArgs: serveArgs})
}

// mustRunConfig runs one harness run as cfg says, on the test's lockd, in
// a directory kept if the test fails, with short quiet times between
// faults, and logs its report.
func mustRunConfig(t *testing.T, cfg runner.Config) *runner.Result {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Binary, cfg.Self, cfg.Dir = mustBuild(t), self, keptDir(t)
	if slices.Contains(cfg.Workloads, traffic.Etcd) && (cfg.Election == "" || cfg.Election == "raft") && !cfg.Secure {
		cfg.EtcdClient = etcdClient.must(t, traffic.BuildEtcdClient)
	}
	cfg.QuietMin, cfg.QuietMax = 500*time.Millisecond, 2*time.Second
	r := runner.Run(cfg)
	var b strings.Builder
	report.Print(&b, r, true)
	t.Log("\n" + b.String())
	if r.Err != nil {
		t.Fatalf("run failed: %v", r.Err)
	}
	return r
}

// TestSmoke runs one short run with a leader kill, a leader pause, a
// partition and a client pause, and requires every checker to pass.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of real processes for about a minute")
	}
	r := mustRun(t, 20260101, 45*time.Second, "kill-leader,pause-leader,partition-leader,pause-client", "", false)
	if r.Faults < 2 {
		t.Errorf("only %d faults were injected", r.Faults)
	}
	if r.Ops < 1000 {
		t.Errorf("only %d operations were recorded", r.Ops)
	}
	requirePassed(t, r)
}

// allCheckers names every checker of package validate. A smoke run must
// have a verdict from each of them: a checker that stops being run fails
// the smoke tests rather than vanishing from them.
var allCheckers = []string{validate.Linearizability, validate.Tokens, validate.LeaseTiming,
	validate.Fencing, validate.Durability, validate.Leaders, validate.Events, validate.FIFO,
	validate.LockDelay, validate.StaleReads, validate.QuietKeepalives, validate.RequestNumbers,
	validate.MasterLease, validate.Queue, validate.KV, validate.Watches, validate.Ephemeral, validate.FencedWrites}

// TestCheck_GivesAVerdictFromEveryChecker runs the checkers on an empty
// run's evidence (no cluster): each checker of allCheckers must answer,
// and no other, so that the smoke tests' list and the runner's agree.
// Durability's verdict is made during the run (after the restart) and
// carried in the evidence, so the empty evidence carries an empty one.
func TestCheck_GivesAVerdictFromEveryChecker(t *testing.T) {
	got := map[string]int{}
	ev := runner.Evidence{Dir: t.TempDir(), Durability: validate.Verdict{Checker: validate.Durability}}
	for _, v := range runner.Check(ev) {
		got[v.Checker]++
	}
	for _, name := range allCheckers {
		if got[name] != 1 {
			t.Errorf("%s gave %d verdicts, want 1", name, got[name])
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("the runner checks with %s, which allCheckers (and so the smoke tests) leave out", name)
	}
}

// requirePassed requires every verdict the run produced to be OK (no
// violation, and decided) and in force (the smoke runs run every
// workload, so no checker may be off), each checker to give one verdict,
// and every checker of allCheckers to be among them.
func requirePassed(t *testing.T, r *runner.Result) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range r.Verdicts {
		if seen[v.Checker] {
			t.Errorf("%s gave more than one verdict", v.Checker)
		}
		seen[v.Checker] = true
		if !v.OK() || v.Off != "" {
			t.Errorf("%s\n%s", v, strings.Join(v.Details, "\n"))
		}
	}
	for _, name := range allCheckers {
		if !seen[name] {
			t.Errorf("no verdict from %s", name)
		}
	}
}

// TestSmokeSecure is TestSmoke's run, shorter, on a secured cluster
// (--secure: HTTPS with client certificates, mutual TLS between nodes,
// ACLs): every checker must pass, the nodes must have refused requests
// without credentials (the runner checks before the workloads start), and
// every kind of client must have been served with its own TLS and token
// and never refused: the workloads' library and raw-HTTP clients, the
// per-node readers, the child fence clients, the namespace workload's
// clients (library and raw HTTP), the checkers.
func TestSmokeSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of real processes for about 40 s")
	}
	fps, err := failpoint.Select("kill-leader,pause-leader,partition-leader,pause-client")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRunConfig(t, runner.Config{Nodes: 3, Seed: 20260102, Duration: 15 * time.Second, Faults: fps,
		Workloads: traffic.All, Secure: true})
	secured := slices.ContainsFunc(r.Events, func(e history.Event) bool { return strings.HasPrefix(e.What, "secured: ") })
	if !secured {
		t.Errorf("no check that the nodes refuse requests without credentials in the timeline")
	}
	if r.Faults < 1 {
		t.Errorf("no fault was injected")
	}
	if r.Ops < 300 {
		t.Errorf("only %d operations were recorded", r.Ops)
	}
	requirePassed(t, r)
	ev, err := runner.LoadEvidence(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, op := range r.History {
		if op.Code == api.CodeUnauthorized || op.Code == api.CodeForbidden {
			t.Errorf("refused by the ACLs: %+v", op)
		}
		if op.Status != history.OK && !(op.Kind == history.End && op.Err == "abandoned") {
			continue
		}
		switch {
		case op.Kind == history.Read && op.Node != "":
			served["per-node reader of "+op.Node] = true
		case op.Kind == history.End:
			served["expiry or lock-delay session (raw HTTP)"] = true
		case op.Kind == history.Acquire:
			served["acquire of "+op.Lock] = true
		}
	}
	for _, rt := range ev.Retries {
		if rt.Code == api.CodeUnauthorized || rt.Code == api.CodeForbidden {
			t.Errorf("refused by the ACLs: %+v", rt)
		}
		served["request-number worker (raw HTTP)"] = served["request-number worker (raw HTTP)"] || rt.Status == history.OK
	}
	for _, g := range ev.Grants {
		served[fmt.Sprintf("fenced lock, child %v", g.Child)] = true
	}
	for _, sr := range ev.StaleReads {
		served["?stale read of "+sr.Lock] = true
	}
	for _, op := range ev.KV.Ops {
		if op.Code == api.CodeUnauthorized || op.Code == api.CodeForbidden {
			t.Errorf("refused by the ACLs: %+v", op)
		}
		if op.Status == history.OK || op.Kind == history.KVRepeat && op.Code == api.CodeRepeated {
			served["namespace "+string(op.Kind)] = true
		}
	}
	for _, w := range ev.KV.Fenced {
		if w.Code == api.CodeUnauthorized || w.Code == api.CodeForbidden {
			t.Errorf("refused by the ACLs: %+v", w)
		}
		served["namespace fenced write"] = served["namespace fenced write"] || w.Status == history.OK
	}
	for _, e := range ev.KV.Ephemeral {
		if e.Ended != 0 {
			served["namespace ephemeral session, "+e.How] = true
		}
	}
	served["namespace ephemeral reads"] = len(ev.KV.EphReads) > 0
	for _, l := range ev.KV.Watches {
		served["namespace watch"] = served["namespace watch"] || len(l.Events) > 0
	}
	want := []string{"expiry or lock-delay session (raw HTTP)", "request-number worker (raw HTTP)",
		"fenced lock, child true", "fenced lock, child false", "?stale read of " + traffic.ElectionName,
		"?stale read of " + traffic.LockNames[0], "acquire of " + traffic.ElectionName, "acquire of " + traffic.QueueLock,
		"acquire of " + traffic.SharedLock, "acquire of " + traffic.FencedLock, "acquire of " + traffic.LockNames[0]}
	for _, n := range []string{"n1", "n2", "n3"} {
		want = append(want, "per-node reader of "+n)
	}
	for _, k := range []history.KVKind{history.KVGet, history.KVPut, history.KVCAS, history.KVTxn, history.KVDelete, history.KVRepeat} {
		want = append(want, "namespace "+string(k))
	}
	want = append(want, "namespace fenced write", "namespace ephemeral session, destroy", "namespace ephemeral reads", "namespace watch")
	for _, w := range want {
		if !served[w] {
			t.Errorf("never served on the secured cluster: %s", w)
		}
	}
}

// keptDir returns a directory for a run's data that is removed when the
// test passes and kept, with its path logged, when it fails: a failing
// run's history, node logs and evidence are what tells why.
func keptDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "lockd-jepsen-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run's data is kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return filepath.Join(dir, "run")
}
