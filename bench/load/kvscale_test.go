package load_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// The kv-scale run at a small scale against a real cluster whose nodes
// serve /metrics and profiles and snapshot every 64 entries: every key is
// written and the memory read; the watchers all wait, none is woken by
// the measured puts, and each put reaches its watcher; the paced puts see
// snapshots and are sorted by them.
func TestKVScale_AgainstACluster(t *testing.T) {
	c := servertest.NewWith(t, 3, func(_ int, cfg *server.Config) {
		cfg.Metrics = prometheus.NewRegistry()
		cfg.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Pprof = true
	}, func(nc *lease.Config) {
		nc.SnapshotThreshold, nc.SnapshotInterval = 64, 50*time.Millisecond
	})
	c.WaitLeader()
	cfg := small(c.URLs())
	cfg.Keys, cfg.Batch, cfg.Writers, cfg.ValueSize = 200, 32, 4, 256
	cfg.Watchers = []int{50}
	cfg.PutRate, cfg.SnapshotWindow = 200, 3*time.Second
	cfg.Progress = func(line string) { t.Log(line) }
	rows, err := load.KVScale(context.Background(), cfg)
	var b strings.Builder
	load.Print(&b, rows)
	t.Log("\n" + b.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kv-load", "kv-wake", "kv-wake", "kv-put-nosnap", "kv-put-snap-leader", "kv-put-snap-follower"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		// The paced puts may lose a few to a leader whose snapshots
		// (every 64 entries here) cost it its lease on a slow machine
		// (the race detector): that is what those rows measure.
		if r.Bench != want[i] || i < 3 && r.Errors != 0 || r.Errors > int64(r.Ops)/10 {
			t.Errorf("row %d: %s %d: %d errors (%s) for %d puts, want %s without errors", i, r.Bench, r.N, r.Errors, r.FirstError, r.Ops, want[i])
		}
	}
	ld := rows[0]
	if ld.Ops != 200 || ld.Batch != 32 || len(ld.Memory) != 3 {
		t.Errorf("kv-load: %d keys, batch %d, memory of %d nodes", ld.Ops, ld.Batch, len(ld.Memory))
	}
	for _, m := range ld.Memory {
		if !m.AfterGC || m.HeapBefore == 0 || m.HeapLoaded == 0 || m.HeapAfter == 0 || m.HeapWatching == 0 || m.RSSAfter == 0 || m.HeapEnd == 0 {
			t.Errorf("kv-load: memory %+v", m)
		}
	}
	for _, r := range rows[1:3] {
		if r.Ops == 0 || r.Woken != 0 || r.Parked != int64(r.N) || r.Latency.P50 <= 0 {
			t.Errorf("kv-wake %d: %d puts, %d woken, %d waiting, p50 %v", r.N, r.Ops, r.Woken, r.Parked, r.Latency.P50)
		}
	}
	if rows[1].N != 0 || rows[2].N != 50 {
		t.Errorf("kv-wake rows of %d and %d watchers, want 0 and 50", rows[1].N, rows[2].N)
	}
	puts := rows[3].Ops + rows[4].Ops + rows[5].Ops
	if puts < 300 || len(rows[3].Snapshots) == 0 || rows[4].Ops+rows[5].Ops == 0 {
		t.Errorf("paced puts: %d in all, %d during snapshots, %d snapshots seen", puts, rows[4].Ops+rows[5].Ops, len(rows[3].Snapshots))
	}
	for _, s := range rows[3].Snapshots {
		if s.Count < 1 || s.Seconds <= 0 || s.Bytes == 0 || s.To <= s.From {
			t.Errorf("snapshot %+v", s)
		}
	}
}

// A system that is not lockd's HTTP API is refused.
func TestKVScale_RefusesAnotherSystem(t *testing.T) {
	cfg := load.DefaultConfig()
	cfg.System = noKV{}
	if _, err := load.KVScale(context.Background(), cfg); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("err = %v, want errors.ErrUnsupported", err)
	}
}
