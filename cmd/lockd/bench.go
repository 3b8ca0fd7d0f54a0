package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/lockd/lockd/internal/bench"
)

const benchUsage = "lockd bench elections [--n 3,5,7,9,16] [--seeds 10] [--algorithms ring,bully,invitation,raft] [--out DIR]"

// benchCmd runs "lockd bench elections": flags -> bench.Config ->
// bench.Run.
func benchCmd(args []string) int {
	fs := newFlagSet("lockd bench elections", benchUsage)
	def := bench.DefaultConfig()
	ns := fs.String("n", joinInts(def.Ns), "comma-separated cluster sizes, each 3..64")
	seeds := fs.Int("seeds", def.Seeds, "runs (seeds 1, 2, ...) behind each random-scenario row, 1..1000")
	algs := fs.String("algorithms", "ring,bully,invitation,raft", "comma-separated algorithms: ring, bully, invitation, raft")
	out := fs.String("out", def.Out, "directory for elections.csv and elections.svg")
	quiet := fs.Bool("quiet", false, "print the table only: no progress on stderr")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return exitOK
		}
		return usageErr(fs, "which benchmark? (elections)")
	}
	if args[0] != "elections" {
		return usageErr(fs, "unknown benchmark %q (want elections)", args[0])
	}
	pos, command, err := parseArgs(fs, args[1:])
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return usageErr(fs, "unexpected arguments %q", append(pos, command...))
	}
	cfg := def
	if cfg.Ns, err = bench.ParseNs(*ns); err != nil {
		return usageErr(fs, "--n: %v", err)
	}
	if cfg.Algorithms, err = bench.ParseAlgorithms(*algs); err != nil {
		return usageErr(fs, "--algorithms: %v", err)
	}
	if *out == "" {
		return usageErr(fs, "--out must name a directory")
	}
	cfg.Seeds, cfg.Out, cfg.Output = *seeds, *out, os.Stdout
	if !*quiet {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(fs, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := bench.Run(ctx, cfg); err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "wrote %s and %s in %s\n", bench.CSVFile, bench.SVGFile, cfg.Out)
	}
	return exitOK
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
