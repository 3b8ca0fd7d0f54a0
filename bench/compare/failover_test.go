package compare

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func secs(ss ...float64) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		out = append(out, time.Duration(s*float64(time.Second)))
	}
	return out
}

func TestTimes_Stats(t *testing.T) {
	if _, _, _, ok := (Times{Failed: 3}).Stats(); ok {
		t.Error("stats without a successful trial")
	}
	// An even count takes the lower median, as `lockd-bench failover` does.
	lo, p50, hi, ok := Times{Times: secs(4, 1, 3, 2)}.Stats()
	if !ok || lo != time.Second || p50 != 2*time.Second || hi != 4*time.Second {
		t.Errorf("stats %v %v %v %v", lo, p50, hi, ok)
	}
}

func TestFailoverOptions_Validate(t *testing.T) {
	ok := DefaultFailoverOptions()
	ok.System, ok.Endpoints, ok.PIDFiles, ok.Restart = Etcd, []string{"a", "b", "c"}, []string{"1", "2", "3"}, []string{"restart", "{i}"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	lockd := DefaultFailoverOptions()
	lockd.System, lockd.Binary, lockd.Dir = Lockd, "bin/lockd", "d"
	if err := lockd.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*FailoverOptions){
		func(o *FailoverOptions) { o.Trials = 0 },
		func(o *FailoverOptions) { o.PIDFiles = o.PIDFiles[:2] },
		func(o *FailoverOptions) { o.Restart = nil },
		func(o *FailoverOptions) { o.TTL = time.Second },
		func(o *FailoverOptions) { o.System = "consul" },
		func(o *FailoverOptions) { o.System = Lockd },
	}
	for i, f := range bad {
		o := ok
		f(&o)
		if o.Validate() == nil {
			t.Errorf("case %d: %+v validates", i, o)
		}
	}
	res, err := RunFailover(context.Background(), FailoverOptions{System: ZooKeeper})
	if err == nil || res.Error == "" || res.Failover == nil {
		t.Errorf("RunFailover without options: %v, %+v", err, res)
	}
}

// memberPID signals only a running process whose command line names the
// PID file's directory.
func TestMemberPID(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m1.pid")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := memberPID(file); err == nil {
		t.Error("no PID file, no error")
	}
	write("garbage\n")
	if _, err := memberPID(file); err == nil {
		t.Error("garbage PID, no error")
	}
	write(strconv.Itoa(os.Getpid()))
	if _, err := memberPID(file); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Errorf("this test's own process taken for a member: %v", err)
	}
	cmd := exec.Command("sh", "-c", "sleep 30; :", filepath.Join(dir, "m1"))
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); _ = cmd.Wait() }()
	write(strconv.Itoa(cmd.Process.Pid) + "\n")
	if pid, err := memberPID(file); err != nil || pid != cmd.Process.Pid {
		t.Errorf("member %d: %d, %v", cmd.Process.Pid, pid, err)
	}
	cmd.Process.Kill()
	_ = cmd.Wait() // killed: the error is the kill
	if running(cmd.Process.Pid) {
		t.Error("a reaped process runs")
	}
	if _, err := memberPID(file); err == nil {
		t.Error("an exited member, no error")
	}
}

// fakeProber has two channels a column, one try in flight on each at a
// time; it takes the lock in column 0 on its fifth try, and has a column 1
// (which takes it on its third) if col1 is set. A try that does not take
// it fails at once, or with hang set hangs until it is bounded.
type fakeProber struct {
	col1     bool
	hang     bool
	tries    [2]atomic.Int32
	inflight atomic.Int32
	most     atomic.Int32 // the most tries in flight at once
}

func (p *fakeProber) channels(col int) (int, int) {
	if col == 1 && !p.col1 {
		return 0, 0
	}
	return 2, 1
}

func (p *fakeProber) try(ctx context.Context, col, _ int, _ uint64) error {
	n := p.tries[col].Add(1)
	now := p.inflight.Add(1)
	defer p.inflight.Add(-1)
	for m := p.most.Load(); now > m && !p.most.CompareAndSwap(m, now); m = p.most.Load() {
	}
	if (col == 0 && n >= 5) || (col == 1 && n >= 3) {
		return nil
	}
	if p.hang {
		<-ctx.Done()
	}
	return errors.New("no leader")
}

func (p *fakeProber) close() {}

// probe records each column's first lock; a column that takes none by
// the time its context ends has none.
func TestProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &fakeProber{col1: true}
	times := probe(ctx, p, time.Now())
	if len(times) != 2 || times[0] <= 0 || times[1] <= 0 {
		t.Errorf("times %v", times)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	p = &fakeProber{hang: true}
	if times := probe(ctx2, p, time.Now()); len(times) != 1 || times[0] != 0 {
		t.Errorf("with every try hanging: times %v", times)
	}
	if m := p.most.Load(); m > 2 {
		t.Errorf("%d tries in flight at once; at most one per channel, two channels", m)
	}
}
