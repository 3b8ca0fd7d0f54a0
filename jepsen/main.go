// Command jepsen is lockd's fault-injection harness. It builds lockd with
// the lockd_unsafe tag (the build that has --unsafe-fault-injection and
// --unsafe-debug, which the default build leaves out), starts a cluster of real processes on loopback addresses (127.a.b.x),
// runs client workloads while it injects faults on a schedule drawn from a
// seed, heals, checks the history with every checker of package validate,
// and reports. See RESULTS.md for the
// campaigns run so far and the commands that reproduce them.
//
//	go run ./jepsen --runs 5 --duration 30s --faults all
//	go run ./jepsen --seed 42 --faults kill-leader,partition-leader
//	go run ./jepsen --unsafe-debug grant-held --faults none   (self-test)
//	go run ./jepsen --no-fencing --faults pause-client         (negative control)
//	go run ./jepsen --secure --faults all                      (TLS, mutual TLS, ACLs)
//
// It exits 0 when every checker passed in every run, 1 when a checker
// found a violation or could not decide, and 2 on a usage error. A run in
// which a checker could not decide (and none found a violation) is run
// once more with the same seed; it counts as failed unless that re-run
// decides with no violation. The campaign row says how many runs were
// undecided and how their re-runs went.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/report"
	"github.com/lockd/lockd/jepsen/runner"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
)

// options are the command's flags.
type options struct {
	built        bool // lockd was built from this tree, not given with --lockd
	nodes        int
	nonVoters    int
	deadVoter    time.Duration
	runs         int
	duration     time.Duration
	seed         uint64
	faults       string
	workloads    string
	workloadList []string // workloads parsed
	etcdClient   string   // the etcd workload's child, built when it runs
	unsafeDebug  string
	election     string
	out          string
	noFencing    bool
	unsafeClock  bool
	secure       bool
	ttl          time.Duration
	results      string
	binary       string
	serveArgs    string
	keep         bool
	check        string
}

func (o *options) register(fs *flag.FlagSet) {
	fs.IntVar(&o.nodes, "nodes", 3, "cluster size: 3 or 5")
	fs.IntVar(&o.nonVoters, "non-voters", 0, "raft: start this many of the nodes as non-voters, and every node with --voters (nodes - non-voters): the leader replaces a dead voter by a non-voter (see the kill-voter fault)")
	fs.DurationVar(&o.deadVoter, "dead-voter-after", 3*time.Second, "with --non-voters: the nodes' --dead-voter-after")
	fs.IntVar(&o.runs, "runs", 1, "number of runs; run i uses seed+i")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long workloads and faults run in each run")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the first run (0: drawn at random and printed)")
	fs.StringVar(&o.faults, "faults", "all", "comma-separated faults, all, or none; known: "+strings.Join(failpoint.Names(), ","))
	fs.StringVar(&o.workloads, "workloads", strings.Join(traffic.All, ","), "comma-separated workloads, or all; known: "+strings.Join(traffic.All, ","))
	fs.StringVar(&o.unsafeDebug, "unsafe-debug", "", "TEST ONLY: passed to lockd serve --unsafe-debug (stale-reads, grant-held, ...; lockd serve --help of a lockd_unsafe build lists them)")
	fs.StringVar(&o.election, "election", "raft", "passed to lockd serve --election: raft, ring, bully, invitation or emergent")
	fs.StringVar(&o.out, "out", "", "directory for data, logs and reports (default: a new temporary directory)")
	fs.BoolVar(&o.noFencing, "no-fencing", false, "negative control: the fenced resource accepts every token")
	fs.BoolVar(&o.unsafeClock, "unsafe-clock", false, "allow the clock-skew, clock-rate and clock-fast-followers faults (beyond the lease's drift bound; clock-drift, within it, needs no flag)")
	fs.BoolVar(&o.secure, "secure", false, "secure the cluster: HTTPS with client certificates, mutual TLS between nodes, ACLs; every client speaks TLS with a token (the workloads non-admin tokens of their own)")
	fs.DurationVar(&o.ttl, "ttl", 2*time.Second, "TTL of the clients' sessions")
	fs.StringVar(&o.results, "results", "", "append this campaign's row to this RESULTS.md")
	fs.StringVar(&o.binary, "lockd", "", "use this lockd binary instead of building one; it must be built with -tags lockd_unsafe (make build-unsafe)")
	fs.StringVar(&o.check, "check", "", "check a saved run again with every checker (history.jsonl, and the evidence.json next to it) and exit; no cluster")
	fs.BoolVar(&o.keep, "keep", false, "keep every run's node logs, history and evidence (default: failing runs' only)")
	fs.StringVar(&o.serveArgs, "serve-args", "", "more arguments for every lockd serve, space-separated (e.g. \"--heartbeat-timeout 2s\")")
}

func main() {
	if traffic.IsFenceClient() {
		os.Exit(traffic.RunFenceClient())
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("jepsen", flag.ContinueOnError)
	var o options
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.check != "" {
		return checkHistory(o.check, 5*time.Minute)
	}
	faults, err := failpoint.Select(o.faults)
	if err == nil {
		o.workloadList, err = traffic.Select(o.workloads)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	case o.nodes != 3 && o.nodes != 5:
		fmt.Fprintln(os.Stderr, "jepsen: --nodes must be 3 or 5")
		return 2
	case o.nonVoters < 0 || o.nonVoters > 0 && (o.election != "raft" || o.nodes-o.nonVoters < 3 || (o.nodes-o.nonVoters)%2 == 0):
		fmt.Fprintln(os.Stderr, "jepsen: --non-voters needs --election raft and leaves at least 3 voters (--nodes 5 --non-voters 2)")
		return 2
	case o.runs < 1:
		fmt.Fprintln(os.Stderr, "jepsen: --runs must be at least 1")
		return 2
	}
	if o.seed == 0 {
		o.seed = rand.Uint64N(1 << 31)
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "lockd-jepsen-"); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 1
		}
	}
	if o.binary == "" {
		o.built = true
		if o.binary, err = proccluster.Build(o.out); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 1
		}
	}
	if slices.Contains(o.workloadList, traffic.Etcd) && (o.election == "raft" || o.election == "") && !o.secure {
		if o.etcdClient, err = traffic.BuildEtcdClient(o.out); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 1
	}
	// SIGINT/SIGTERM end the campaign after the current run, whose
	// processes are killed on the way out.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := ensureTools(faults); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 1
	}
	if err := failpoint.RemoveStaleChains(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen: stale iptables rules of a killed harness:", err)
	}
	camp := &report.Campaign{Mode: o.mode(), Faults: o.faults, Command: o.command()}
	exit := 0
	for i := range o.runs {
		if ctx.Err() != nil {
			fmt.Println("interrupted")
			exit = 1
			break
		}
		seed := o.seed + uint64(i)
		r := o.runOnce(o.config(seed, self, faults))
		camp.Add(r)
		if r.Err == nil && r.Violations() == 0 && !report.Decided(r) && ctx.Err() == nil {
			fmt.Printf("seed %d: undecided (%s): running it once more\n", seed, undecidedNames(r))
			cfg := o.config(seed, self, faults)
			cfg.Dir += "-rerun"
			camp.AddRerun(o.runOnce(cfg))
		}
	}
	if !camp.Passed() {
		exit = 1
	}
	fmt.Println("\ncampaign:", camp.Row())
	switch {
	case o.results != "" && ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "jepsen: interrupted: not recorded in", o.results)
	case o.results != "":
		if err := addResultsRow(o.results, camp.Row()); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen: results:", err)
		}
	}
	return exit
}

// ensureTools makes sure the host has what the selected faults need (the
// iptables-* faults: root and iptables): if something is missing it runs
// scripts/jepsen-deps.sh of the module the harness runs in, which installs
// iptables as root with apt-get, and checks again. It returns why the
// faults cannot run, if they still cannot.
func ensureTools(faults []failpoint.Failpoint) error {
	err := failpoint.MissingTools(faults)
	if err == nil {
		return nil
	}
	script := depsScript()
	if script == "" {
		return fmt.Errorf("%w; leave those faults out of --faults to run without them", err)
	}
	fmt.Fprintf(os.Stderr, "jepsen: %v: running %s\n", err, script)
	cmd := exec.Command(script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if rerr := cmd.Run(); rerr != nil {
		fmt.Fprintf(os.Stderr, "jepsen: %s: %v\n", script, rerr)
	}
	if err := failpoint.MissingTools(faults); err != nil {
		return fmt.Errorf("%w; %s could not install it; leave those faults out of --faults to run without them", err, script)
	}
	return nil
}

// depsScript returns scripts/jepsen-deps.sh of the nearest directory at or
// above the working directory that holds go.mod, or "" if there is none.
func depsScript() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "scripts", "jepsen-deps.sh")
			if _, err := os.Stat(p); err == nil {
				return p
			}
			return ""
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// addResultsRow adds row at the end of the first table of the results file
// (the campaign table), or at the end of the file if it has no table.
func addResultsRow(path, row string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	at, inTable := len(lines), false
	for i, l := range lines {
		if strings.HasPrefix(l, "|") {
			inTable = true
		} else if inTable {
			at = i
			break
		}
	}
	lines = append(lines[:at], append([]string{row}, lines[at:]...)...)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// runOnce runs one run, prints and writes its report, and keeps its
// history, node logs and evidence only if it failed (or with --keep).
func (o *options) runOnce(cfg runner.Config) *runner.Result {
	r := runner.Run(cfg)
	report.Print(os.Stdout, r, true)
	clean := r.Err == nil && r.Violations() == 0 && report.Decided(r)
	hist := r.History
	if clean && !o.keep {
		hist = nil // keep the history of failing runs only
	}
	if err := report.Write(r, hist); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen: write report:", err)
	}
	if clean && !o.keep {
		_ = os.RemoveAll(filepath.Join(r.Dir, "nodes"))          // keep logs of failing runs only
		_ = os.Remove(filepath.Join(r.Dir, runner.EvidenceFile)) // of no use without the history
	}
	return r
}

// undecidedNames lists the checkers that could not decide in r.
func undecidedNames(r *runner.Result) string {
	var out []string
	for _, v := range r.Verdicts {
		if v.Undecided != "" {
			out = append(out, v.Checker)
		}
	}
	return strings.Join(out, ", ")
}

func (o *options) config(seed uint64, self string, faults []failpoint.Failpoint) runner.Config {
	return runner.Config{Binary: o.binary, Self: self, EtcdClient: o.etcdClient, Nodes: o.nodes, Seed: seed, Duration: o.duration,
		Faults: faults, Workloads: o.workloadList, UnsafeDebug: o.unsafeDebug,
		Election: o.election, NonVoters: o.nonVoters, DeadVoterAfter: o.deadVoter, ServeArgs: strings.Fields(o.serveArgs), NoFencing: o.noFencing, UnsafeClock: o.unsafeClock, Secure: o.secure, TTL: o.ttl,
		Dir: filepath.Join(o.out, fmt.Sprintf("run-%d", seed)),
		Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
}

func (o *options) mode() string {
	m := fmt.Sprintf("%s, %d nodes, %v", o.election, o.nodes, o.duration)
	if o.nonVoters > 0 {
		m += fmt.Sprintf(" (%d voters, %d non-voters, --voters %d, --dead-voter-after %v)", o.nodes-o.nonVoters, o.nonVoters, o.nodes-o.nonVoters, o.deadVoter)
	}
	if o.unsafeDebug != "" {
		m += ", unsafe-debug " + o.unsafeDebug
	}
	if o.noFencing {
		m += ", no fencing"
	}
	if o.secure {
		m += ", secure (TLS, mTLS, ACLs)"
	}
	if !o.built && o.binary != "" {
		return m + ", lockd binary " + o.binary
	}
	return m + ", at commit " + sourceCommit()
}

// sourceCommit names the commit the harness and the lockd it builds come
// from, "-dirty" when the work tree has changes, so that a campaign's row
// says what it ran.
func sourceCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (no git)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}

func (o *options) command() string {
	c := fmt.Sprintf("go run ./jepsen --nodes %d --runs %d --duration %v --seed %d --faults %s",
		o.nodes, o.runs, o.duration, o.seed, o.faults)
	if o.nonVoters > 0 {
		c += fmt.Sprintf(" --non-voters %d --dead-voter-after %v", o.nonVoters, o.deadVoter)
	}
	if o.unsafeDebug != "" {
		c += " --unsafe-debug " + o.unsafeDebug
	}
	if o.noFencing {
		c += " --no-fencing"
	}
	if o.unsafeClock {
		c += " --unsafe-clock"
	}
	if o.secure {
		c += " --secure"
	}
	if o.election != "raft" {
		c += " --election " + o.election
	}
	if o.serveArgs != "" {
		c += fmt.Sprintf(" --serve-args %q", o.serveArgs)
	}
	if !slices.Equal(o.workloadList, traffic.All) {
		c += " --workloads " + o.workloads
	}
	if o.ttl != 2*time.Second {
		c += fmt.Sprintf(" --ttl %v", o.ttl)
	}
	return c
}
