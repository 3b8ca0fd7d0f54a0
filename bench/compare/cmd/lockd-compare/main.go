// Command lockd-compare measures lockd, etcd or ZooKeeper with the rows of
// `lockd-bench`, and etcd and lockd's nodes serving etcd's v3 API
// (lockd-etcd) with the etcd-API rows, and compares the results:
//
//	lockd-compare run --system lockd|etcd|zookeeper|lockd-etcd --endpoints A,B,C --out FILE [row flags]
//	lockd-compare failover --system etcd|zookeeper --endpoints A,B,C --pid-files P1,P2,P3 --restart CMD --out FILE [flags]
//	lockd-compare failover --system lockd --lockd-bin PATH --dir DIR --out FILE [flags]
//	lockd-compare report [--json FILE] [--markdown FILE] [--commit C] [--command S] RESULT.json...
//
// `make bench-compare` (scripts/bench-compare.sh) starts each cluster,
// runs `run` and then `failover` against it, stops it (lockd's failover
// runs after, on a cluster of its own), and ends with `report`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/bench/compare"
	"github.com/lockd/lockd/bench/load"
)

const usage = `usage:
  lockd-compare run --system lockd|etcd|zookeeper|lockd-etcd --endpoints A,B,C --out FILE
        [--duration 10s] [--warmup 15s] [--workers 1,16,64] [--waiters 2,16,64]
        [--sessions 1000] [--callers 64] [--ttl 30s] [--keepalive-batch 1] [--version TEXT] [--quiet]
        [--benches locks,handoff,keepalive[,kv][,etcd-api]] [--fanout 1000] [--hot-keys 4] [--value-size 1024]
        [--mutex-workers 1,16,64,256] [--kv-workers 16,64] [--leases 1000,100000]
        [--grant-rate 2000] [--grant-limit 4m] [--profile-dir DIR --profile-endpoints URL,URL,URL]
  lockd-compare failover --system etcd|zookeeper --endpoints A,B,C --pid-files P1,P2,P3
        --restart "CMD ARGS... {i}" --out FILE [--trials 5] [--workers 8] [--settle 2s]
        [--ttl 30s] [--version TEXT] [--quiet]
  lockd-compare failover --system lockd --lockd-bin PATH --dir DIR --out FILE [--trials 5] ...
  lockd-compare report [--json FILE] [--markdown FILE] [--commit C] [--command S] RESULT.json...`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "failover":
		err = failover(os.Args[2:])
	case "report":
		err = report(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Println(usage)
		return
	default:
		err = usageError(fmt.Sprintf("unknown command %q", os.Args[1]))
	}
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintf(os.Stderr, "lockd-compare: %s\n%s\n", u, usage)
		os.Exit(2)
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintf(os.Stderr, "lockd-compare: %v\n", err)
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

// Defaults returns the rows `make bench-compare` runs by default.
func defaults() load.Config {
	cfg := load.DefaultConfig()
	cfg.Workers, cfg.Waiters, cfg.Sessions = []int{1, 16, 64}, []int{2, 16, 64}, []int{1000}
	return cfg
}

func run(args []string) error {
	fs := flag.NewFlagSet("lockd-compare run", flag.ContinueOnError)
	def := defaults()
	system := fs.String("system", "", "lockd, etcd or zookeeper")
	endpoints := fs.String("endpoints", "", "comma-separated client addresses (host:port)")
	out := fs.String("out", "", "write the result as JSON to this file")
	version := fs.String("version", "", "the system's version, for the report")
	warmup := fs.Duration("warmup", 15*time.Second, "unreported locks row at the largest worker count before the rows")
	rowFlags := load.RowFlags(fs, def)
	kvFlags := load.KVFlags(fs, def)
	benches := fs.String("benches", strings.Join(compare.DefaultBenches, ","),
		"comma-separated benches to run, of "+strings.Join(compare.Benches, ", ")+
			" (kv: the kv-put, kv-get, kv-cas and kv-txn rows at each --workers count, kv-watch at each --fanout count;"+
			" etcd-api, against etcd and lockd-etcd only: the mutex, put, range, watch and lease-keepalive rows; lockd-etcd's default)")
	apiDef := compare.DefaultAPIOptions()
	mutexWorkers := fs.String("mutex-workers", joinInts(apiDef.MutexWorkers), "etcd-api: comma-separated worker counts of the mutex rows (none: no such rows)")
	kvWorkers := fs.String("kv-workers", joinInts(apiDef.KVWorkers), "etcd-api: comma-separated worker counts of the put and range rows (none: no such rows)")
	leases := fs.String("leases", joinInts(apiDef.Leases), "etcd-api: comma-separated lease counts of the lease-keepalive rows (none: no such rows)")
	grantRate := fs.Float64("grant-rate", apiDef.GrantRate, "etcd-api: at most this many lease grants a second in a lease-keepalive row")
	grantLimit := fs.Duration("grant-limit", apiDef.GrantLimit, "etcd-api: a lease-keepalive row fails if granting its leases takes longer")
	profileDir := fs.String("profile-dir", "", "etcd-api: write a CPU profile of each node during each row to this directory (needs --profile-endpoints)")
	profileEndpoints := fs.String("profile-endpoints", "", "etcd-api: comma-separated URLs of the nodes to profile, which serve /debug/pprof (lockd serve --pprof, etcd --enable-pprof)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	benchesSet := false
	fs.Visit(func(f *flag.Flag) { benchesSet = benchesSet || f.Name == "benches" })
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if *out == "" || *system == "" || *endpoints == "" {
		return usageError("--system, --endpoints and --out are required")
	}
	cfg, err := rowFlags()
	if err == nil {
		cfg, err = kvFlags(cfg)
	}
	if err != nil {
		return usageError(err.Error())
	}
	var which []string
	for _, b := range strings.Split(*benches, ",") {
		b = strings.TrimSpace(b)
		if !slices.Contains(compare.Benches, b) {
			return usageError(fmt.Sprintf("--benches: unknown bench %q (want some of %s)", b, strings.Join(compare.Benches, ", ")))
		}
		which = append(which, b)
	}
	if !benchesSet && *system == compare.LockdEtcd {
		which = nil // its default: the etcd-API rows
	}
	api := apiDef
	api.GrantRate, api.GrantLimit = *grantRate, *grantLimit
	for _, l := range []struct {
		flag string
		in   string
		out  *[]int
	}{{"mutex-workers", *mutexWorkers, &api.MutexWorkers}, {"kv-workers", *kvWorkers, &api.KVWorkers}, {"leases", *leases, &api.Leases}} {
		ns, err := parseInts(l.in)
		if err != nil {
			return usageError(fmt.Sprintf("--%s: %v", l.flag, err))
		}
		*l.out = ns
	}
	if err := api.Validate(); err != nil {
		return usageError(err.Error())
	}
	switch {
	case (*profileDir == "") != (*profileEndpoints == ""):
		return usageError("--profile-dir and --profile-endpoints go together")
	case *profileDir != "":
		api.Profiler = &compare.Profiler{Dir: *profileDir, Endpoints: strings.Split(*profileEndpoints, ",")}
	}
	if *warmup < 0 || *warmup > 10*time.Minute {
		return usageError(fmt.Sprintf("--warmup %v out of range 0..10m", *warmup))
	}
	if !*quiet {
		cfg.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := compare.Run(ctx, compare.Options{System: *system, Endpoints: strings.Split(*endpoints, ","),
		Version: *version, Warmup: *warmup, Benches: which, Load: cfg, API: &api})
	if werr := compare.WriteJSON(*out, res); werr != nil && err == nil {
		err = werr
	}
	var rows []load.Row // the etcd-API rows are printed by their own report
	for _, r := range res.Rows {
		if !slices.Contains(compare.APIRowBenches, r.Bench) {
			rows = append(rows, r)
		}
	}
	if len(rows) > 0 {
		load.Print(os.Stderr, rows)
	}
	if rep := compare.NewReport([]compare.Result{res}).EtcdAPI; rep != nil && len(rep.Lines) > 0 {
		rep.Print(os.Stderr)
	}
	if p := api.Profiler; p != nil {
		for _, f := range p.Files() {
			fmt.Fprintf(os.Stderr, "profile: %s\n", f)
		}
	}
	return err
}

// joinInts and parseInts are bench/load's comma-separated lists of
// counts ("none": the empty list).
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "none" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func failover(args []string) error {
	fs := flag.NewFlagSet("lockd-compare failover", flag.ContinueOnError)
	def := compare.DefaultFailoverOptions()
	system := fs.String("system", "", "lockd, etcd or zookeeper")
	endpoints := fs.String("endpoints", "", "etcd, zookeeper: comma-separated client addresses (host:port), in member order")
	pidFiles := fs.String("pid-files", "", "etcd, zookeeper: comma-separated PID files of the members, in the same order")
	restart := fs.String("restart", "", "etcd, zookeeper: the command that starts member {i} (from 1) again, space-separated")
	bin := fs.String("lockd-bin", "", "lockd: the lockd binary its own cluster runs")
	dir := fs.String("dir", "", "lockd: the directory for its cluster's data and logs")
	trials := fs.Int("trials", def.Trials, "kills of the leader")
	workers := fs.Int("workers", def.Workers, "background workers taking and releasing locks over all members")
	settle := fs.Duration("settle", def.Settle, "how long the whole cluster runs before each trial")
	ttl := fs.Duration("ttl", def.TTL, "the sessions' TTL")
	out := fs.String("out", "", "write the result as JSON to this file")
	version := fs.String("version", "", "the system's version, for the report")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if *out == "" || *system == "" {
		return usageError("--system and --out are required")
	}
	opts := def
	opts.System, opts.Version, opts.Binary, opts.Dir = *system, *version, *bin, *dir
	opts.Trials, opts.Workers, opts.Settle, opts.TTL = *trials, *workers, *settle, *ttl
	if *endpoints != "" {
		opts.Endpoints = strings.Split(*endpoints, ",")
	}
	if *pidFiles != "" {
		opts.PIDFiles = strings.Split(*pidFiles, ",")
	}
	opts.Restart = strings.Fields(*restart)
	if err := opts.Validate(); err != nil {
		return usageError(err.Error())
	}
	if !*quiet {
		opts.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := compare.RunFailover(ctx, opts)
	if werr := compare.WriteJSON(*out, res); werr != nil && err == nil {
		err = werr
	}
	if f := res.Failover; f != nil {
		summary := func(what string, t compare.Times) {
			if lo, p50, hi, ok := t.Stats(); ok {
				fmt.Fprintf(os.Stderr, "%s failover, %s: %d trials, min %v, p50 %v, max %v, %d failed\n", compare.Title(*system), what,
					f.Trials, lo.Round(time.Millisecond), p50.Round(time.Millisecond), hi.Round(time.Millisecond), t.Failed)
			}
		}
		summary("a session made before the kill", f.Kill)
		if f.NewSession != nil {
			summary("a new session per try", *f.NewSession)
		}
	}
	return err
}

func report(args []string) error {
	fs := flag.NewFlagSet("lockd-compare report", flag.ContinueOnError)
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	md := fs.String("markdown", "", "also write the report as a Markdown block to this file")
	commit := fs.String("commit", "", "the commit measured, for the report")
	command := fs.String("command", "", "the command that ran, for the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("no result files")
	}
	var results []compare.Result
	for _, path := range fs.Args() {
		r, err := compare.ReadResult(path)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	rep := compare.NewReport(results)
	rep.Commit, rep.Command = *commit, *command
	rep.Print(os.Stdout)
	if *jsonOut != "" {
		if err := compare.WriteJSON(*jsonOut, rep); err != nil {
			return err
		}
	}
	if *md != "" {
		f, err := os.Create(*md)
		if err != nil {
			return err
		}
		rep.Markdown(f)
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
