package system

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockd/lockd/bench/failover"
)

// lockd-bench failover starts its own cluster, times a failover of each
// kind through a survivor, and writes what it measured.
func TestBench_FailoverRunsOnItsOwnCluster(t *testing.T) {
	bin := mustBuildBench(t)
	out := filepath.Join(t.TempDir(), "failover.json")
	cmd := exec.Command(bin, "failover", "--trials", "1", "--workers", "2", "--settle", "100ms", "--quiet", "--json", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lockd-bench failover: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Rows []failover.Row }
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v, want kill and stop", rep.Rows)
	}
	for _, r := range rep.Rows {
		if r.Failed != 0 || len(r.Times) != 1 || r.Times[0] <= 0 || r.P50 != r.Times[0] {
			t.Errorf("%s: %+v, want one trial timed", r.Kind, r)
		}
		if r.LoadCycles == 0 {
			t.Errorf("%s: the workers completed no cycle", r.Kind)
		}
	}
}

// Bad flags are refused before any process starts.
func TestBench_FailoverRefusesBadFlags(t *testing.T) {
	bin := mustBuildBench(t)
	for _, args := range [][]string{{"--nodes", "4"}, {"--faults", "reboot"}, {"--trials", "0"}} {
		cmd := exec.Command(bin, append([]string{"failover"}, args...)...)
		b, err := cmd.CombinedOutput()
		if exitCodeOf(err) != 2 {
			t.Errorf("%v: exit %v, want 2 (usage)\n%s", args, err, b)
		}
	}
}
