package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/lockd/lockd/internal/failbench"
)

// failoverCmd runs "lockd bench failover": a cluster of its own (this
// binary, on 127.0.0.1 ports the OS picks, data in a temporary directory
// removed afterwards), its leader killed or stopped again and again under
// load (internal/failbench).
func failoverCmd(args []string) int {
	fs := newFlagSet("lockd bench failover", benchUsage)
	def := failbench.DefaultConfig()
	nodes := fs.Int("nodes", def.Nodes, "cluster size: 3 or 5")
	trials := fs.Int("trials", def.Trials, "trials of each fault")
	faults := fs.String("faults", strings.Join(def.Kinds, ","), "faults to time: kill (SIGKILL, then restart), stop (SIGSTOP, then SIGCONT)")
	workers := fs.Int("workers", def.Workers, "workers running lock cycles over all nodes meanwhile")
	settle := fs.Duration("settle", def.Settle, "how long the whole cluster runs before each trial")
	serveFlags := fs.String("serve-flags", "", "more flags for every node, space-separated (e.g. \"--heartbeat-timeout 300ms --election-timeout 300ms\")")
	keep := fs.Bool("keep", false, "keep the nodes' data and logs (the directory is printed)")
	jsonOut := fs.String("json", "", "also write the rows as JSON to this file")
	quiet := fs.Bool("quiet", false, "print the table only: no progress on stderr")
	pos, command, err := parseArgs(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return usageErr(fs, "unexpected arguments %q", append(pos, command...))
	}
	cfg := def
	cfg.Nodes, cfg.Trials, cfg.Workers, cfg.Settle = *nodes, *trials, *workers, *settle
	cfg.Kinds = strings.Split(*faults, ",")
	cfg.Extra = strings.Fields(*serveFlags)
	if cfg.Binary, err = os.Executable(); err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	if cfg.Dir, err = os.MkdirTemp("", "lockd-failover-"); err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	if err := cfg.Validate(); err != nil {
		_ = os.RemoveAll(cfg.Dir) // a temporary directory, still empty
		return usageErr(fs, "%v", err)
	}
	if *keep {
		fmt.Fprintf(os.Stderr, "data and logs in %s\n", cfg.Dir)
	} else {
		defer func() { _ = os.RemoveAll(cfg.Dir) }() // a temporary directory
	}
	if !*quiet {
		cfg.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rows, err := failbench.Run(ctx, cfg)
	failbench.Print(os.Stdout, rows)
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(struct {
			Date    time.Time       `json:"date"`
			Command string          `json:"command"`
			Rows    []failbench.Row `json:"rows"`
		}{time.Now().UTC(), "lockd bench failover " + strings.Join(args, " "), rows}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o600); err != nil {
			return fail(os.Stderr, fs.Name(), err)
		}
	}
	return exitOK
}
