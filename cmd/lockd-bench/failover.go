package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockd/lockd/bench/failover"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/test/proccluster"
)

// failoverCmd runs "lockd-bench failover": a cluster of its own (lockd
// processes of --lockd, on 127.0.0.1 ports the OS picks, data in a
// temporary directory removed afterwards), its leader killed or stopped
// again and again under load (bench/failover).
func failoverCmd(args []string) int {
	fs := cli.NewFlagSet("lockd-bench failover", benchUsage)
	def := failover.DefaultConfig()
	nodes := fs.Int("nodes", def.Nodes, "cluster size: 3 or 5")
	trials := fs.Int("trials", def.Trials, "trials of each fault")
	faults := fs.String("faults", strings.Join(def.Kinds, ","), "faults to time: kill (SIGKILL, then restart), stop (SIGSTOP, then SIGCONT)")
	workers := fs.Int("workers", def.Workers, "workers running lock cycles over all nodes meanwhile")
	settle := fs.Duration("settle", def.Settle, "how long the whole cluster runs before each trial")
	serveFlags := fs.String("serve-flags", "", "more flags for every node, space-separated (e.g. \"--heartbeat-timeout 300ms --election-timeout 300ms\")")
	binary := fs.String("lockd", "", "the lockd binary to start (default: the lockd beside this command, else one built with go build from this module)")
	keep := fs.Bool("keep", false, "keep the nodes' data and logs (the directory is printed)")
	jsonOut := fs.String("json", "", "also write the rows as JSON to this file")
	quiet := fs.Bool("quiet", false, "print the table only: no progress on stderr")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return cli.UsageErr(fs, "unexpected arguments %q", append(pos, command...))
	}
	cfg := def
	cfg.Nodes, cfg.Trials, cfg.Workers, cfg.Settle = *nodes, *trials, *workers, *settle
	cfg.Kinds = strings.Split(*faults, ",")
	cfg.Extra = strings.Fields(*serveFlags)
	if err := cfg.Validate(); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if cfg.Dir, err = os.MkdirTemp("", "lockd-failover-"); err != nil {
		return fail(fs.Name(), err)
	}
	if cfg.Binary, err = lockdBinary(*binary, cfg.Dir); err != nil {
		_ = os.RemoveAll(cfg.Dir) // a temporary directory
		return fail(fs.Name(), err)
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
	rows, err := failover.Run(ctx, cfg)
	failover.Print(os.Stdout, rows)
	if err != nil {
		return fail(fs.Name(), err)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(struct {
			Date    time.Time      `json:"date"`
			Command string         `json:"command"`
			Rows    []failover.Row `json:"rows"`
		}{time.Now().UTC(), "lockd-bench failover " + strings.Join(args, " "), rows}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o600); err != nil {
			return fail(fs.Name(), err)
		}
	}
	return cli.ExitOK
}

// lockdBinary returns the lockd to start: flag if set, else the lockd in
// the directory of this executable (make build puts both in bin/), else
// one built into dir from the module this command was run in.
func lockdBinary(flag, dir string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "lockd")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() {
			return beside, nil
		}
	}
	return proccluster.BuildTags(dir) // the production build: the benchmark's clusters are Plain
}
