package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/bench/elections"
	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/internal/cli"
)

const benchUsage = `lockd-bench elections [--n 3,5,7,9,16] [--seeds 10] [--algorithms ring,bully,invitation,raft] [--pool-n 8,..,256] [--pool-sizes 3,5,7] [--out DIR]
  lockd-bench locks|handoff|keepalive|serving [--addr ADDRS] [--duration 10s] [--workers 1,16,64,256]
              [--waiters 2,16,64] [--sessions 1000,10000,100000] [--callers 64] [--ttl 30s] [--keepalive-batch 1] [--json FILE]
  lockd-bench waiters [--addr ADDRS] [--duration 10s] [--queue 10000] [--setup-timeout 2m] [--json FILE]
  lockd-bench watchers [--addr ADDRS] [--duration 10s] [--watchers 10000] [--setup-timeout 2m] [--json FILE]
  lockd-bench kv [--addr ADDRS] [--duration 10s] [--workers 1,16,64,256] [--hot-keys 4] [--value-size 1024]
              [--fanout 1000] [--setup-timeout 2m] [--json FILE]
  lockd-bench kv-scale [--addr ADDRS] [--keys 100000] [--value-size 1024] [--batch 128] [--writers 8] [--watchers 10000]
              [--duration 10s] [--watch-rate 500] [--put-rate 200] [--snapshot-window 2m] [--stale] [--setup-timeout 2m] [--json FILE]
  lockd-bench failover [--lockd PATH] [--nodes 3] [--trials 10] [--faults kill,stop] [--workers 8] [--settle 2s]
              [--serve-flags FLAGS] [--keep] [--json FILE]`

// benchCmd runs "lockd-bench": elections (flags -> elections.Config ->
// elections.Run), or the serving benchmarks against a running cluster (flags
// -> load.Config -> load.Locks, Handoff, Keepalive, Waiters, Watchers,
// KVRows, KVScale).
func benchCmd(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "locks", "handoff", "keepalive", "serving", "waiters", "watchers", "kv", "kv-scale":
			return loadCmd(args[0], args[1:])
		case "failover":
			return failoverCmd(args[1:])
		}
	}
	fs := cli.NewFlagSet("lockd-bench elections", benchUsage)
	def := elections.DefaultConfig()
	ns := fs.String("n", joinInts(def.Ns), "comma-separated cluster sizes, each 3..64")
	seeds := fs.Int("seeds", def.Seeds, "runs (seeds 1, 2, ...) behind each random-scenario row, 1..1000")
	algs := fs.String("algorithms", "ring,bully,invitation,raft", "comma-separated algorithms: ring, bully, invitation, raft")
	out := fs.String("out", def.Out, "directory for elections.csv and elections.svg")
	poolNs := fs.String("pool-n", joinInts(def.PoolNs), "idle-pool axis: comma-separated cluster sizes, each 3..256; empty skips it")
	poolSizes := fs.String("pool-sizes", joinInts(def.PoolSizes), "idle-pool axis: the emergent slave pool sizes")
	quiet := fs.Bool("quiet", false, "print the table only: no progress on stderr")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return cli.ExitOK
		}
		return cli.UsageErr(fs, "which benchmark? (elections, locks, handoff, keepalive, serving, waiters, watchers, kv, kv-scale, failover)")
	}
	if args[0] != "elections" {
		return cli.UsageErr(fs, "unknown benchmark %q (want elections, locks, handoff, keepalive, serving, waiters, watchers, kv, kv-scale or failover)", args[0])
	}
	pos, command, err := cli.ParseArgs(fs, args[1:])
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return cli.UsageErr(fs, "unexpected arguments %q", append(pos, command...))
	}
	cfg := def
	if cfg.Ns, err = elections.ParseNs(*ns); err != nil {
		return cli.UsageErr(fs, "--n: %v", err)
	}
	if cfg.Algorithms, err = elections.ParseAlgorithms(*algs); err != nil {
		return cli.UsageErr(fs, "--algorithms: %v", err)
	}
	if *out == "" {
		return cli.UsageErr(fs, "--out must name a directory")
	}
	if cfg.PoolNs, err = parseIntList(*poolNs); err != nil {
		return cli.UsageErr(fs, "--pool-n: %v", err)
	}
	if cfg.PoolSizes, err = parseIntList(*poolSizes); err != nil {
		return cli.UsageErr(fs, "--pool-sizes: %v", err)
	}
	cfg.Seeds, cfg.Out, cfg.Output = *seeds, *out, os.Stdout
	if !*quiet {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := cfg.Validate(); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := elections.Run(ctx, cfg); err != nil {
		return fail(fs.Name(), err)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "wrote %s and %s in %s\n", elections.CSVFile, elections.SVGFile, cfg.Out)
	}
	return cli.ExitOK
}

// parseIntList parses "8,16,32" (empty: none).
func parseIntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// loadCmd runs the serving benchmarks against the cluster at --addr:
// "serving" runs locks, handoff and keepalive one after another; the
// scale rows, waiters and watchers, and the namespace's rows, kv, run
// only when named.
func loadCmd(which string, args []string) int {
	fs := cli.NewFlagSet("lockd-bench "+which, benchUsage)
	def := load.DefaultConfig()
	var cf cli.Endpoint
	cf.Register(fs)
	rowFlags := load.RowFlags(fs, def)
	scaleFlags := load.ScaleFlags(fs, def)
	kvFlags := load.KVFlags(fs, def)
	kvScaleFlags := load.KVScaleFlags(fs, def)
	jsonOut := fs.String("json", "", "also write the rows as JSON to this file")
	quiet := fs.Bool("quiet", false, "print the table only: no progress on stderr")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return cli.UsageErr(fs, "unexpected arguments %q", append(pos, command...))
	}
	cfg, err := rowFlags()
	if err == nil {
		cfg, err = scaleFlags(cfg)
	}
	if err == nil {
		cfg, err = kvFlags(cfg)
	}
	cfg = kvScaleFlags(cfg)
	if err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if cfg.Endpoints, cfg.TLS, err = cf.Endpoints(); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if !*quiet {
		cfg.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var rows []load.Row
	for _, b := range []struct {
		name    string
		run     func(context.Context, load.Config) ([]load.Row, error)
		serving bool // run by "serving"
	}{{"locks", load.Locks, true}, {"handoff", load.Handoff, true}, {"keepalive", load.Keepalive, true},
		{"waiters", load.Waiters, false}, {"watchers", load.Watchers, false}, {"kv", load.KVRows, false}, {"kv-scale", load.KVScale, false}} {
		if which != b.name && (which != "serving" || !b.serving) {
			continue
		}
		got, err := b.run(ctx, cfg)
		rows = append(rows, got...)
		if err != nil {
			load.Print(os.Stdout, rows)
			return fail(fs.Name(), err)
		}
	}
	load.Print(os.Stdout, rows)
	if *jsonOut != "" {
		rep := load.Report{Date: time.Now().UTC(), Endpoints: cfg.Endpoints, Command: "lockd-bench " + which + " " + strings.Join(args, " "), Rows: rows}
		if err := load.WriteJSON(*jsonOut, rep); err != nil {
			return fail(fs.Name(), err)
		}
	}
	return cli.ExitOK
}
