package compare

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/test/servertest"
)

func smallRows() load.Config {
	cfg := load.DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Workers, cfg.Waiters, cfg.Sessions = []int{1, 4}, []int{3}, []int{40}
	cfg.Callers, cfg.TTL = 8, 3*time.Second
	return cfg
}

// Run measures lockd on an in-process cluster: a warm-up, then every
// row, without errors; the report compares it with nothing else.
func TestRun_Lockd(t *testing.T) {
	c := servertest.New(t, 3)
	c.WaitLeader()
	var lines []string
	cfg := smallRows()
	cfg.Progress = func(l string) { lines = append(lines, l) }
	var res Result
	var err error
	// On a machine too busy to schedule the leader for a while, its
	// master lease runs out or leadership moves, and requests fail until a
	// leader serves again: the rows count that as errors (they never
	// retry), or stop if it happens while they create sessions. The test
	// then tries again, up to three times.
	for try := 1; try <= 3; try++ {
		lines = nil
		res, err = Run(context.Background(), Options{System: Lockd, Endpoints: c.URLs(), Version: "test", Warmup: 200 * time.Millisecond, Load: cfg})
		failed := slices.IndexFunc(res.Rows, func(r load.Row) bool { return r.Errors > 0 }) >= 0
		if !failed && !errors.Is(err, &api.Error{Code: api.CodeNoLeader}) {
			break
		}
		t.Logf("try %d: %v, rows %+v", try, err, res.Rows)
		c.WaitLeader()
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 || res.Error != "" || len(res.NotApplicable) != 0 {
		t.Fatalf("%d rows, error %q, not applicable %v", len(res.Rows), res.Error, res.NotApplicable)
	}
	for _, r := range res.Rows {
		if r.Ops == 0 || r.Errors != 0 {
			t.Errorf("%s %d: %d ops, %d errors (%s)", r.Bench, r.N, r.Ops, r.Errors, r.FirstError)
		}
	}
	if ka := res.Rows[3]; ka.RaftEntries == nil || *ka.RaftEntries != 0 {
		t.Errorf("keepalive writes %v", ka.RaftEntries)
	}
	if !slices.Contains(c.URLs(), res.Leader) {
		t.Errorf("leader %q is none of %v", res.Leader, c.URLs())
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "lockd: warm-up") {
		t.Errorf("progress %q: want a warm-up line first, prefixed with the system", lines)
	}
	rep := NewReport([]Result{res})
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, "hand-off") {
			if tg.Status == Unmeasured {
				t.Errorf("hand-off target unmeasured: %+v", tg)
			}
		} else if tg.Status != Unmeasured {
			t.Errorf("target %q is %s without a peer", tg.Name, tg.Status)
		}
	}
}

// A system that is not known, or rows that do not validate, stop the run
// before it starts, and the result says why.
func TestRun_Refuses(t *testing.T) {
	for _, o := range []Options{{System: "consul", Endpoints: []string{"x"}, Load: smallRows()}, {System: Etcd, Load: load.Config{}}} {
		res, err := Run(context.Background(), o)
		if err == nil || res.Error == "" {
			t.Errorf("%s: no error", o.System)
		}
	}
}

// The kv rows through Run, on an in-process lockd cluster: every row,
// without errors, and nothing else.
func TestRun_LockdKV(t *testing.T) {
	c := servertest.New(t, 3)
	c.WaitLeader()
	cfg := load.DefaultConfig()
	cfg.Duration, cfg.Workers, cfg.Fanout = 300*time.Millisecond, []int{2}, []int{5}
	var res Result
	var err error
	for try := 1; try <= 3; try++ { // as TestRun_Lockd: a starved leader fails requests for a while
		res, err = Run(context.Background(), Options{System: Lockd, Endpoints: c.URLs(), Benches: []string{"kv"}, Load: cfg})
		failed := len(res.Rows) > 0 && res.Rows[len(res.Rows)-1].Bench != "kv-watch"
		for _, r := range res.Rows {
			failed = failed || r.Errors > 0
		}
		if !failed && !errors.Is(err, &api.Error{Code: api.CodeNoLeader}) {
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
	}
	if want := "kv-put kv-get kv-cas kv-txn kv-watch"; strings.Join(got, " ") != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	if _, err := Run(context.Background(), Options{System: Lockd, Endpoints: c.URLs(), Benches: []string{"kv", "scan"}, Load: cfg}); err == nil {
		t.Error("an unknown bench ran")
	}
}
