// Package compare runs lockd's serving rows (bench/load: locks,
// handoff, keepalive, and, when asked, the kv rows of the namespace of
// keys) and its failover trials (bench/failover, and
// their counterparts here) against lockd, etcd and ZooKeeper, one system
// at a time, and compares the results: a table with lockd/etcd and
// lockd/ZooKeeper ratios, the targets lockd is held to, JSON, and a
// Markdown block for BENCHMARKS.md.
//
// The etcd-API rows (bench etcd-api, etcdapi.go) compare lockd's nodes
// serving etcd's v3 API (the system lockd-etcd) with etcd, both through
// the same clientv3 code, in a table of their own with lockd-etcd/etcd
// ratios (apireport.go).
//
// It is a module of its own, so that lockd's module never depends on
// etcd's or ZooKeeper's clients. `make bench-compare` (scripts/
// bench-compare.sh) starts each cluster only while it is measured.
package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// The systems, in the order the report shows them.
const (
	Lockd     = "lockd"
	Etcd      = "etcd"
	ZooKeeper = "zookeeper"
)

// Systems are the systems compared, lockd first.
var Systems = []string{Lockd, Etcd, ZooKeeper}

// Benches are the benches a system can run, in order. etcd-api runs
// against etcd and lockd-etcd only.
var Benches = []string{"locks", "handoff", "keepalive", "kv", EtcdAPIBench}

// DefaultBenches are the benches run unless Options.Benches names
// others: the kv rows only when asked (as `lockd-bench serving` leaves
// them out).
var DefaultBenches = []string{"locks", "handoff", "keepalive"}

// RowBenches are the benches of the rows the benches make, in the
// order the report shows them: kv makes kv-put, kv-get, kv-cas, kv-txn
// and kv-watch rows.
var RowBenches = []string{"locks", "handoff", "keepalive", "keepalive-batch", "kv-put", "kv-get", "kv-cas", "kv-txn", "kv-watch"}

// benchOf is the bench that makes rows of bench row.
func benchOf(row string) string {
	if strings.HasPrefix(row, "kv-") {
		return "kv"
	}
	return row
}

// Options say what to measure on one system.
type Options struct {
	System    string   // Lockd, Etcd or ZooKeeper
	Endpoints []string // its client addresses (host:port; lockd also takes URLs)
	// Version describes the system's server and client, for the report.
	Version string
	// Warmup, if positive, runs a locks row at the largest worker count
	// for this long before the measured rows, unreported. Every system
	// gets the same; ZooKeeper's JVMs need it most (they run at about
	// half speed for their first 10-20 s of load).
	Warmup time.Duration
	// Benches are the benches to run, of Benches, in that order
	// whatever the order here; nil: DefaultBenches.
	Benches []string
	// Load holds the rows (Duration, Workers, Waiters, Sessions, Callers,
	// TTL; for kv also Fanout, HotKeys, ValueSize) and Progress; its
	// Endpoints and System are set by Run.
	Load load.Config
	// API holds the etcd-API rows' own settings (the others are Load's:
	// Duration, Callers, TTL, Fanout, ValueSize); zero: DefaultAPIOptions.
	API *APIOptions
}

// defaultBenches are the benches run when Options.Benches is nil:
// DefaultBenches, or for lockd-etcd the etcd-API rows, the only ones it
// runs.
func defaultBenches(system string) []string {
	if system == LockdEtcd {
		return []string{EtcdAPIBench}
	}
	return DefaultBenches
}

// Result is one system's rows, written as JSON by `lockd-compare run`
// and read back by `lockd-compare report`.
type Result struct {
	System    string    `json:"system"`
	Version   string    `json:"version,omitempty"`
	Endpoints []string  `json:"endpoints"`
	Started   time.Time `json:"started"`
	Warmup    float64   `json:"warmup_seconds"`
	Callers   int       `json:"callers"`
	TTL       float64   `json:"ttl_seconds"`
	// Leader is the endpoint that led when the rows began ("" if it could
	// not be told): the 1-worker row's session is on the first endpoint.
	Leader string     `json:"leader,omitempty"`
	Rows   []load.Row `json:"rows"`
	// NotApplicable maps a bench the system has no counterpart of to
	// the reason.
	NotApplicable map[string]string `json:"not_applicable,omitempty"`
	// Failover holds the failover trials (`lockd-compare failover`
	// writes a result of its own with only these), if they were run.
	Failover *Failover `json:"failover,omitempty"`
	// Error is the error that stopped the run, if one did; the rows
	// before it are kept.
	Error string `json:"error,omitempty"`
	// API holds the etcd-API rows' settings, if they ran.
	API *APIOptions `json:"etcd_api,omitempty"`
}

// system is a load.System that Run opens and closes, and that may have
// no counterpart of a bench.
type system interface {
	load.System
	Close() error
	// NotApplicable says why the system has no counterpart of bench, or
	// returns "".
	NotApplicable(bench string) string
}

// open returns the System of opts.System; nil for lockd, whose System
// bench/load builds from the endpoints (with the connection pool
// `lockd-bench` uses).
func open(name string, endpoints []string) (system, error) {
	switch name {
	case Lockd:
		return nil, nil
	case Etcd, LockdEtcd:
		e, err := newEtcd(endpoints)
		if err != nil {
			return nil, err
		}
		e.name = name
		return e, nil
	case ZooKeeper:
		return newZooKeeper(endpoints)
	}
	return nil, fmt.Errorf("unknown system %q (want %s, %s, %s or %s)", name, Lockd, Etcd, ZooKeeper, LockdEtcd)
}

// Run measures opts.System. The result holds the rows measured before
// an error, and the error's text.
func Run(ctx context.Context, opts Options) (Result, error) {
	cfg := opts.Load
	cfg.Endpoints, cfg.System = opts.Endpoints, nil
	res := Result{System: opts.System, Version: opts.Version, Endpoints: opts.Endpoints, Started: time.Now().UTC(),
		Warmup: opts.Warmup.Seconds(), Callers: cfg.Callers, TTL: cfg.TTL.Seconds()}
	fail := func(err error) (Result, error) {
		res.Error = err.Error()
		return res, err
	}
	if err := cfg.Validate(); err != nil {
		return fail(err)
	}
	benches := opts.Benches
	if benches == nil {
		benches = defaultBenches(opts.System)
	}
	for _, b := range benches {
		if !slices.Contains(Benches, b) {
			return fail(fmt.Errorf("unknown bench %q (want some of %s)", b, strings.Join(Benches, ", ")))
		}
	}
	apiOpts := DefaultAPIOptions()
	if opts.API != nil {
		apiOpts = *opts.API
	}
	if slices.Contains(benches, EtcdAPIBench) {
		if err := apiOpts.Validate(); err != nil {
			return fail(err)
		}
	}
	sys, err := open(opts.System, opts.Endpoints)
	if err != nil {
		return fail(err)
	}
	if sys != nil {
		defer func() { _ = sys.Close() }()
		cfg.System = sys
	}
	if progress := cfg.Progress; progress != nil {
		cfg.Progress = func(line string) { progress(opts.System + ": " + line) }
	}
	if opts.Warmup > 0 && len(cfg.Workers) > 0 {
		w := cfg
		w.Duration, w.Workers = opts.Warmup, []int{slices.Max(cfg.Workers)}
		if w.Progress != nil {
			w.Progress(fmt.Sprintf("warm-up: locks at %d workers for %v, not reported", w.Workers[0], w.Duration))
		}
		if _, err := load.Locks(ctx, w); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	leader := -1
	if i, err := leaderOf(ctx, opts.System, opts.Endpoints); err == nil {
		res.Leader, leader = opts.Endpoints[i], i
	} else if cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf("which endpoint leads is unknown: %v", err))
	}
	runs := map[string]func(context.Context, load.Config) ([]load.Row, error){
		"locks": load.Locks, "handoff": load.Handoff, "keepalive": load.Keepalive, "kv": load.KVRows}
	for _, bench := range Benches {
		if !slices.Contains(benches, bench) {
			continue
		}
		why := ""
		if sys != nil {
			why = sys.NotApplicable(bench)
		} else if bench == EtcdAPIBench {
			why = notEtcdAPI
		}
		if why != "" {
			if res.NotApplicable == nil {
				res.NotApplicable = map[string]string{}
			}
			res.NotApplicable[bench] = why
			continue
		}
		var rows []load.Row
		var err error
		if bench == EtcdAPIBench {
			res.API = &apiOpts
			if p := apiOpts.Profiler; p != nil && p.Progress == nil {
				p.Progress = cfg.Progress
			}
			e := sys.(*etcd)
			if leader > 0 { // the leader first, on every system alike
				e = e.from(leader)
				defer e.watches.closeAll()
			}
			apiOpts.Order = e.endpoints
			rows, err = runAPI(ctx, e, cfg, apiOpts)
		} else {
			rows, err = runs[bench](ctx, cfg)
		}
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", bench, err))
		}
	}
	return res, nil
}

// leaderOf returns the index of the endpoint that leads the cluster now.
func leaderOf(ctx context.Context, system string, endpoints []string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var first error
	for i, ep := range endpoints {
		var leads bool
		var err error
		switch system {
		case Lockd:
			leads, err = lockdLeads(ctx, ep)
		case Etcd, LockdEtcd:
			leads, err = etcdLeads(ctx, ep)
		case ZooKeeper:
			leads, err = zookeeperLeads(ctx, ep)
		}
		if err != nil {
			first = cmp(first, err)
			continue
		}
		if leads {
			return i, nil
		}
	}
	return -1, cmp(first, fmt.Errorf("no endpoint of %v says it leads", endpoints))
}

// scaleRowsUnsupported is what etcd's and ZooKeeper's Waiters and Watch
// answer: lockd-compare runs neither the waiters nor the watchers rows.
func scaleRowsUnsupported(system string) error {
	return fmt.Errorf("%s: the waiters and watchers rows are not built for it: %w", system, errors.ErrUnsupported)
}
