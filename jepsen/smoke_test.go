package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/proccluster"
	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/report"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// TestMain lets the test binary serve as the child fence client, which the
// harness starts by re-executing itself.
func TestMain(m *testing.M) {
	if traffic.IsFenceClient() {
		os.Exit(traffic.RunFenceClient())
	}
	os.Exit(m.Run())
}

var (
	buildOnce sync.Once
	lockdBin  string
	buildErr  error
)

// mustBuild builds lockd once per test binary.
func mustBuild(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockd-jepsen-test-")
		if err != nil {
			buildErr = err
			return
		}
		lockdBin, buildErr = proccluster.Build(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return lockdBin
}

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
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := runner.Run(runner.Config{Binary: mustBuild(t), Self: self, Nodes: 3, Seed: seed, Duration: d,
		Faults: fps, Workloads: workloads, UnsafeDebug: unsafeDebug, NoFencing: noFencing, UnsafeClock: unsafeClock, ServeArgs: serveArgs,
		Dir: keptDir(t), QuietMin: 500 * time.Millisecond, QuietMax: 2 * time.Second})
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
	for _, name := range []string{validate.Linearizability, validate.Tokens, validate.LeaseTiming,
		validate.Fencing, validate.Durability, validate.Leaders, validate.MasterLease, validate.Events} {
		v, ok := r.Verdict(name)
		if !ok {
			t.Errorf("no verdict from %s", name)
		} else if !v.OK() {
			t.Errorf("%s: %s\n%s", name, v, strings.Join(v.Details, "\n"))
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
		os.RemoveAll(dir)
	})
	return filepath.Join(dir, "run")
}
