// Command lockd-compare measures lockd, etcd or ZooKeeper with the rows of
// `lockd bench` and compares the results:
//
//	lockd-compare run --system lockd|etcd|zookeeper --endpoints A,B,C --out FILE [row flags]
//	lockd-compare report [--json FILE] [--markdown FILE] [--commit C] [--command S] RESULT.json...
//
// `make bench-compare` (scripts/bench-compare.sh) starts each cluster,
// runs `run` against it, stops it, and ends with `report`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/lockd/lockd/bench/compare"
	"github.com/lockd/lockd/internal/load"
)

const usage = `usage:
  lockd-compare run --system lockd|etcd|zookeeper --endpoints A,B,C --out FILE
        [--duration 10s] [--warmup 15s] [--workers 1,16,64] [--waiters 2,16,64]
        [--sessions 1000] [--callers 64] [--ttl 30s] [--version TEXT] [--quiet]
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
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if *out == "" || *system == "" || *endpoints == "" {
		return usageError("--system, --endpoints and --out are required")
	}
	cfg, err := rowFlags()
	if err != nil {
		return usageError(err.Error())
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
		Version: *version, Warmup: *warmup, Load: cfg})
	if werr := compare.WriteJSON(*out, res); werr != nil && err == nil {
		err = werr
	}
	if len(res.Rows) > 0 {
		load.Print(os.Stderr, res.Rows)
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
