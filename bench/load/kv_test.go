package load_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/test/servertest"
)

// The kv rows run against a real cluster, spread over its nodes, without
// an error: every put, read, increment and transaction counts, the
// counters of kv-cas sum to the increments made, and every watcher sees
// every put of kv-watch.
func TestKVRows_AgainstACluster(t *testing.T) {
	c := servertest.New(t, 3)
	c.WaitLeader()
	cfg := small(c.URLs())
	cfg.Workers, cfg.Fanout, cfg.HotKeys = []int{4}, []int{20}, 2
	cfg.Progress = func(line string) { t.Log(line) }
	rows, err := load.KVRows(context.Background(), cfg)
	var b strings.Builder
	load.Print(&b, rows)
	t.Log("\n" + b.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kv-put", "kv-get", "kv-cas", "kv-txn", "kv-watch"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Bench != want[i] || r.Ops == 0 || r.Errors != 0 || r.Latency.Max < r.Latency.P99 {
			t.Errorf("row %d: %s %d: %d ops, %d errors (%s), latency %+v", i, r.Bench, r.N, r.Ops, r.Errors, r.FirstError, r.Latency)
		}
	}
	if cas := rows[2]; cas.Keys != 2 {
		t.Errorf("kv-cas: %d keys, want 2", cas.Keys)
	}
	if w := rows[4]; w.N != 20 || w.Parked != 20 {
		t.Errorf("kv-watch: %d watchers, %d parked, want 20", w.N, w.Parked)
	}
	noSessionsLeft(t, c)
}

// With more workers than hot keys, increments conflict: the row counts
// the cas_failed puts apart from errors.
func TestKVCAS_CountsConflicts(t *testing.T) {
	c := servertest.New(t, 1)
	c.WaitLeader()
	cfg := small(c.URLs())
	cfg.Workers, cfg.Fanout, cfg.HotKeys = []int{8}, nil, 1
	cfg.Duration = 500 * time.Millisecond
	rows, err := load.KVRows(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cas := rows[2]
	if cas.Bench != "kv-cas" || cas.Ops == 0 || cas.Errors != 0 || cas.CASFailed == 0 {
		t.Errorf("%s: %d increments, %d conflicts, %d errors (%s)", cas.Bench, cas.Ops, cas.CASFailed, cas.Errors, cas.FirstError)
	}
}

// A system without a namespace is refused, not measured.
func TestKVRows_RefuseASystemWithoutKeys(t *testing.T) {
	cfg := load.DefaultConfig()
	cfg.System = noKV{}
	cfg.Duration = 100 * time.Millisecond
	if _, err := load.KVRows(context.Background(), cfg); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("err = %v, want errors.ErrUnsupported", err)
	}
}

// noKV is a System with no namespace; the kv rows call none of its
// methods.
type noKV struct{ load.System }
