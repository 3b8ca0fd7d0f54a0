package compare

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/test/servertest"
)

// The pacer hands out slots 1/rate apart, from now when it has been idle,
// and refuses one past the deadline.
func TestPacer_Slots(t *testing.T) {
	p := newPacer(4) // 250 ms apart
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []time.Duration
	for range 3 {
		got = append(got, p.slot(t0).Sub(t0))
	}
	if want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}
	if at := p.slot(t0.Add(time.Hour)); !at.Equal(t0.Add(time.Hour)) {
		t.Errorf("after an idle hour the slot is %v, want now", at.Sub(t0))
	}
	q := newPacer(1)
	_ = q.slot(time.Now())
	if err := q.wait(context.Background(), time.Now()); !errors.Is(err, errGrantLimit) {
		t.Errorf("a slot past the deadline: %v, want errGrantLimit", err)
	}
}

func TestAPIOptions_Validate(t *testing.T) {
	if err := DefaultAPIOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*APIOptions){
		func(o *APIOptions) { o.GrantRate = 0 },
		func(o *APIOptions) { o.GrantLimit = 0 },
		func(o *APIOptions) { o.MutexWorkers = []int{0} },
		func(o *APIOptions) { o.Leases = []int{2_000_000} },
	} {
		o := DefaultAPIOptions()
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}

// The etcd-API rows through Run, against an in-process lockd cluster
// serving etcd's API (as lockd-etcd): every row, in order, with ops and
// without errors, by the etcd system's clientv3 code.
func TestRun_LockdEtcdAPI(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	c.WaitLeader()
	cfg := load.DefaultConfig()
	cfg.Duration, cfg.Fanout, cfg.Callers, cfg.TTL = 300*time.Millisecond, []int{4}, 4, 3*time.Second
	api := APIOptions{MutexWorkers: []int{1, 3}, KVWorkers: []int{2}, Leases: []int{20}, GrantRate: 1000, GrantLimit: 30 * time.Second}
	var res Result
	var err error
	for try := 1; try <= 3; try++ { // as TestRun_Lockd: a starved leader fails requests for a while
		res, err = Run(context.Background(), Options{System: LockdEtcd, Endpoints: c.EtcdAddrs(), Load: cfg, API: &api})
		failed := err != nil
		for _, r := range res.Rows {
			failed = failed || r.Errors > 0
		}
		if !failed {
			break
		}
		t.Logf("try %d: %v, rows %+v", try, err, res.Rows)
		c.WaitLeader()
	}
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, r.Bench)
		if r.Ops == 0 || r.Errors != 0 {
			t.Errorf("%s %d: %d ops, %d errors (%s)", r.Bench, r.N, r.Ops, r.Errors, r.FirstError)
		}
		if r.Bench == APILease && (r.WrongExpiries != 0 || r.RaftEntries == nil) {
			t.Errorf("lease row: %d wrong expiries, writes %v", r.WrongExpiries, r.RaftEntries)
		}
	}
	if want := "mutex mutex put range watch lease-keepalive"; strings.Join(got, " ") != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	if res.API == nil || len(res.NotApplicable) != 0 || !slices.Contains(c.EtcdAddrs(), res.Leader) {
		t.Fatalf("settings %+v, not applicable %v, leader %q", res.API, res.NotApplicable, res.Leader)
	}
	if o := res.API.Order; len(o) != 3 || o[0] != res.Leader {
		t.Errorf("endpoints in the order %v, want the leader %s first", o, res.Leader)
	}
	rep := NewReport([]Result{res})
	if rep.EtcdAPI == nil || len(rep.EtcdAPI.Lines) != len(res.Rows) || len(rep.Lines) != 0 {
		t.Fatalf("report: %+v, main lines %d", rep.EtcdAPI, len(rep.Lines))
	}
}

// lockd-etcd runs only the etcd-API rows, and lockd and ZooKeeper have
// none: Run says so instead of running them.
func TestRun_EtcdAPINotApplicable(t *testing.T) {
	cfg := load.DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	res, err := Run(context.Background(), Options{System: Lockd, Endpoints: []string{"127.0.0.1:1"}, Benches: []string{EtcdAPIBench}, Load: cfg})
	if err != nil || res.NotApplicable[EtcdAPIBench] != notEtcdAPI || len(res.Rows) != 0 {
		t.Errorf("lockd: %v, not applicable %v, %d rows", err, res.NotApplicable, len(res.Rows))
	}
	e := &etcd{name: LockdEtcd}
	for _, b := range Benches {
		if why := e.NotApplicable(b); (why == "") != (b == EtcdAPIBench) {
			t.Errorf("lockd-etcd, %s: not applicable %q", b, why)
		}
	}
	if why := (&zookeeper{}).NotApplicable(EtcdAPIBench); why != notEtcdAPI {
		t.Errorf("ZooKeeper, etcd-api: %q", why)
	}
	if got := defaultBenches(LockdEtcd); !slices.Equal(got, []string{EtcdAPIBench}) {
		t.Errorf("lockd-etcd's default benches %v", got)
	}
}

// The profiler writes each node's answer to /debug/pprof/profile, for
// the row's seconds, and reports a node that has none without failing.
func TestProfiler(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		_, _ = w.Write([]byte("profile"))
	}))
	defer ok.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	dir := t.TempDir()
	var lines []string
	p := &Profiler{Dir: dir, Endpoints: []string{ok.URL, missing.URL}, Progress: func(l string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, l)
	}}
	ready, wait := p.start("mutex-64", 1500*time.Millisecond)
	ready()
	ready() // only the first call profiles
	wait()
	b, err := os.ReadFile(filepath.Join(dir, "mutex-64-n1.pb.gz"))
	if err != nil || string(b) != "profile" {
		t.Fatalf("node 1's profile: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mutex-64-n2.pb.gz")); err == nil {
		t.Error("node 2, which has no profile, has a file")
	}
	if files := p.Files(); len(files) != 1 {
		t.Errorf("files %v", files)
	}
	if !slices.Equal(asked, []string{"/debug/pprof/profile?seconds=2"}) {
		t.Errorf("asked %v", asked)
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "HTTP 404") }) {
		t.Errorf("progress %q: want node 2's 404", lines)
	}
	var none *Profiler
	r2, w2 := none.start("x", time.Second)
	r2()
	w2()
}
