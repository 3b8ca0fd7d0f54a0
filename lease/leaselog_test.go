package lease_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// leaseLogCluster starts three nodes that log their master leases into
// dir, with more tuning.
func leaseLogCluster(t *testing.T, dir string, tune ...func(*lease.Config)) *servertest.Cluster {
	return servertest.New(t, 3, append([]func(*lease.Config){func(c *lease.Config) {
		c.LeaseLog = filepath.Join(dir, c.ID+".lease")
	}}, tune...)...)
}

func readLeaseLogs(t *testing.T, dir string) ([]validate.LeaseLine, int) {
	t.Helper()
	var all []validate.LeaseLine
	skipped := 0
	files, _ := filepath.Glob(filepath.Join(dir, "*.lease"))
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ls, sk, err := validate.ParseLeaseLog(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		all, skipped = append(all, ls...), skipped+sk
	}
	return all, skipped
}

func monoNow(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// The lease log's times are CLOCK_MONOTONIC, every line's lease is at
// most one master lease long, the leader of a new term logs after the
// old one stopped, and the checker passes the logs of a failover.
func TestLeaseLog_FailoverLogsDisjointLeases(t *testing.T) {
	dir := t.TempDir()
	before := monoNow(t)
	c := leaseLogCluster(t, dir)
	l := c.WaitLeader()
	time.Sleep(300 * time.Millisecond)
	c.Crash(l)
	c.WaitLeader()
	time.Sleep(300 * time.Millisecond)
	lines, skipped := readLeaseLogs(t, dir)
	after := monoNow(t)
	nodes := map[string]bool{}
	longest := lease.DefaultConfig().HeartbeatTimeout
	for _, ln := range lines {
		nodes[ln.Node] = true
		if ln.From < before || ln.From > after {
			t.Errorf("line %+v: from outside [%d, %d]: not CLOCK_MONOTONIC", ln, before, after)
		}
		if d := time.Duration(ln.Until - ln.From); d > longest {
			t.Errorf("line %+v: a lease of %v, longer than the heartbeat timeout %v", ln, d, longest)
		}
	}
	if len(nodes) != 2 || skipped != 0 {
		t.Fatalf("lines from %d nodes (%d skipped), want the two leaders': %+v", len(nodes), skipped, lines)
	}
	if v := validate.CheckMasterLease(lines, skipped, false); !v.OK() {
		t.Fatalf("%s\n%s", v, strings.Join(v.Details, "\n"))
	}
}

// A change of the leader's clock rate while its lease runs is logged at
// once, with the lease's end converted at the new rate: at rate 0.5 the
// same end on the node's clock is twice as far in real time.
func TestLeaseLog_ClockChangeRevisesTheEnd(t *testing.T) {
	dir := t.TempDir()
	c := leaseLogCluster(t, dir)
	l := c.WaitLeader()
	id := c.Nodes[l].ID()
	count := func() (int, validate.LeaseLine) {
		lines, _ := readLeaseLogs(t, dir)
		n, last := 0, validate.LeaseLine{}
		for _, ln := range lines {
			if ln.Node == id {
				n, last = n+1, ln
			}
		}
		return n, last
	}
	full := lease.DefaultConfig().HeartbeatTimeout
	c.Nodes[l].Clock().Set(0, 0.5)
	_, last := count()
	if d := time.Duration(last.Until - last.From); d <= full {
		t.Errorf("after rate 0.5 the last line gives a lease of %v, want more than %v (real time of a slow clock's lease)", d, full)
	}
	c.Nodes[l].Clock().Set(0, 1)
	_, last = count()
	if d := time.Duration(last.Until - last.From); d > full {
		t.Errorf("after rate 1 the last line gives a lease of %v, want at most %v", d, full)
	}
}

// deposedCluster starts three nodes, each tuned by tune if not nil, cuts
// the leader off, and reports whether the old leader still served once a
// new leader did, and the master-lease checker's verdict on the logs.
func deposedCluster(t *testing.T, tune func(*lease.Config)) (stillServing bool, v validate.Verdict) {
	dir := t.TempDir()
	if tune == nil {
		tune = func(*lease.Config) {}
	}
	c := leaseLogCluster(t, dir, tune)
	l := c.WaitLeader()
	old := c.Nodes[l].Node()
	c.Isolate(l)
	servertest.WaitFor(t, 10*time.Second, "a new leader serving", func() bool {
		for i, s := range c.Nodes {
			if leads, _ := s.Node().Leader(); i != l && leads && s.Node().Ready(context.Background()) == nil {
				return true
			}
		}
		return false
	})
	leads, _ := old.Leader()
	stillServing = leads && old.Ready(context.Background()) == nil
	time.Sleep(3 * lease.DefaultConfig().HeartbeatTimeout)
	lines, skipped := readLeaseLogs(t, dir)
	return stillServing, validate.CheckMasterLease(lines, skipped, false)
}

// A leader cut off from the others has stopped serving by the time a new
// leader serves, and the lease logs are disjoint (TestUnsafeDeposedServing
// shows that this test sees a leader that does not stop).
func TestLeaseLog_DeposedLeaderStops(t *testing.T) {
	serving, v := deposedCluster(t, nil)
	if serving || !v.OK() {
		t.Errorf("old leader still serving = %v; %s\n%s", serving, v, strings.Join(v.Details, "\n"))
	}
}
