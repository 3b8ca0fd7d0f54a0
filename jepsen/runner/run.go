// Package runner runs one harness run from start to end: start a cluster
// of real lockd processes, run the workloads and the fault schedule for a
// bounded time, heal, wait for recovery, gather the final state, kill -9
// and restart every node to check durability, run the checkers, and stop
// everything. A run never outlives its hard deadline and never leaves a
// process behind: every process it starts is killed on the way out, also
// after a panic.
package runner

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/proccluster"
)

// Config configures one run.
type Config struct {
	// Binary is a built lockd; Self is this harness's own executable (it
	// re-executes itself as the child fence clients), SelfEnv extra
	// environment for it.
	Binary, Self string
	SelfEnv      []string
	// EtcdClient is the built etcd client child (traffic.BuildEtcdClient),
	// for the etcd workload.
	EtcdClient string
	Nodes      int
	Seed       uint64
	// Duration is how long workloads and faults run.
	Duration time.Duration
	Faults   []failpoint.Failpoint
	// Workloads are traffic workload names.
	Workloads []string
	// UnsafeDebug is passed to lockd serve --unsafe-debug.
	UnsafeDebug string
	// Election is passed to lockd serve --election.
	Election string
	// NonVoters, if not 0, starts the last NonVoters nodes as non-voters
	// (--join --non-voter) and every node with --voters Nodes-NonVoters and
	// --dead-voter-after DeadVoterAfter: the leader keeps that many
	// voters, promoting a non-voter for a dead voter.
	NonVoters      int
	DeadVoterAfter time.Duration
	// ServeArgs are more arguments for every lockd serve.
	ServeArgs []string
	// NoFencing turns the fenced resource's token check off.
	NoFencing bool
	// UnsafeClock allows the clock faults.
	UnsafeClock bool
	// Secure starts a secured cluster: HTTPS with client certificates,
	// mutual TLS between nodes, ACLs (proccluster's TLS and ACL). Every
	// client of the run then speaks TLS with a token: the workloads with
	// tokens of their own (traffic.Config.NewToken), the checkers and the
	// faults' cluster calls with the admin token.
	Secure bool
	// TTL of the clients' sessions. Default 2s.
	TTL time.Duration
	// Dir is where this run's data, logs and reports go.
	Dir string
	// Quiet bounds between faults. Defaults 1s and 3s.
	QuietMin, QuietMax time.Duration
	// Log receives progress lines (nil: none).
	Log func(format string, args ...any)
}

// Result is the outcome of a run.
type Result struct {
	Seed     uint64
	Dir      string
	Ops      int
	Faults   int
	Stats    map[string]int
	Verdicts []validate.Verdict
	Events   []history.Event
	History  []history.Op
	Err      error // the run itself failed (no cluster, ...): no verdict
	Elapsed  time.Duration
	// Aims counts, per aimed fault injected, the cycles that reached the
	// situation the fault aims for (failpoint.Aimed).
	Aims map[string]failpoint.Aim
}

// Violations returns the number of checkers that found violations.
func (r *Result) Violations() int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Violations > 0 {
			n++
		}
	}
	return n
}

// Verdict returns the named checker's verdict.
func (r *Result) Verdict(name string) (validate.Verdict, bool) {
	for _, v := range r.Verdicts {
		if v.Checker == name {
			return v, true
		}
	}
	return validate.Verdict{}, false
}

// HardDeadline is how far past Duration a run may go before it is cut off.
const HardDeadline = 3 * time.Minute

// Run runs one run.
func Run(cfg Config) (res *Result) {
	start := time.Now()
	res = &Result{Seed: cfg.Seed, Dir: cfg.Dir}
	if cfg.TTL == 0 {
		cfg.TTL = 2 * time.Second
	}
	if cfg.QuietMax == 0 {
		cfg.QuietMin, cfg.QuietMax = time.Second, 3*time.Second
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		res.Err = err
		return res
	}
	if err := failpoint.MissingTools(cfg.Faults); err != nil {
		res.Err = err // not a timeline note in a run that passes
		return res
	}
	var leftOut string
	cfg.Workloads, leftOut = withoutEtcd(cfg)
	pc := proccluster.Config{Binary: cfg.Binary, Nodes: cfg.Nodes, Dir: filepath.Join(cfg.Dir, "nodes"),
		Election: cfg.Election, UnsafeDebug: cfg.UnsafeDebug, Extra: cfg.ServeArgs, TLS: cfg.Secure, ACL: cfg.Secure,
		Etcd: slices.Contains(cfg.Workloads, traffic.Etcd)}
	if failpoint.NeedsDisks(cfg.Faults) {
		pc.DiskSize = failpoint.DiskSize
		pc.Extra = append(slices.Clone(pc.Extra), "--log-store", "boltdb")
	}
	if cfg.NonVoters > 0 {
		pc.Voters, pc.NonVoters = cfg.Nodes-cfg.NonVoters, cfg.NonVoters
		pc.KeepVoters, pc.DeadVoterAfter = cfg.Nodes-cfg.NonVoters, cfg.DeadVoterAfter
	}
	c, err := proccluster.New(pc)
	if err != nil {
		res.Err = err
		return res
	}
	defer c.Unmount() // after Close: the processes are gone
	defer c.Close()
	defer func() {
		if p := recover(); p != nil {
			res.Err = fmt.Errorf("runner: panic: %v", p)
		}
		res.Elapsed = time.Since(start)
	}()
	hard, cancelHard := context.WithTimeout(context.Background(), cfg.Duration+HardDeadline)
	defer cancelHard()
	stopWatchdog := context.AfterFunc(hard, c.Close) // a stuck run loses its cluster, so every wait ends
	defer stopWatchdog()

	if err := c.Start(); err != nil {
		res.Err = err
		return res
	}
	if _, err := c.WaitLeader(hard, 30*time.Second); err != nil {
		res.Err = err
		return res
	}
	rec := history.NewRecorder()
	rec.Eventf("cluster of %d up; seed %d", cfg.Nodes, cfg.Seed)
	if leftOut != "" {
		rec.Eventf("%s", leftOut)
	}
	if cfg.Secure {
		what, err := checkSecured(hard, c)
		if err != nil {
			res.Err = err
			return res
		}
		rec.Eventf("%s", what)
	}
	poll := newPoller(c, rec)
	pollCtx, stopPoll := context.WithCancel(hard)
	go poll.run(pollCtx)
	probe := newProber(c)
	if cfg.Election == "" || cfg.Election == "raft" { // the classic modes have no quorum-backed lease
		go probe.run(pollCtx)
	} else {
		close(probe.done)
	}

	tr := traffic.New(trafficConfig(cfg, c, rec))
	work, stopWork := context.WithTimeout(hard, cfg.Duration)
	defer stopWork()
	if err := tr.Start(work); err != nil {
		stopWork()
		tr.Wait()
		stopPoll()
		res.Err = err
		return res
	}
	env := &failpoint.Env{Cluster: c, Binary: cfg.Binary, Rec: rec, Resource: tr.Resource(), EtcdClient: tr.EtcdChild(), TTL: cfg.TTL,
		UnsafeClock: cfg.UnsafeClock, Writes: tr.Writes(), ElectionTimeout: electionTimeout(cfg.ServeArgs),
		HeartbeatTimeout: heartbeatTimeout(cfg.ServeArgs), MaxClockDrift: maxClockDrift(cfg.ServeArgs), Clients: tr.LockAccess(),
		LeaderLeaseTimeout: leaderLeaseTimeout(cfg.ServeArgs), Workloads: cfg.Workloads}
	if cfg.NonVoters > 0 {
		env.DeadVoterAfter = cfg.DeadVoterAfter
	}
	faults := newFaultLog(rec)
	sched := &failpoint.Schedule{Faults: faults.wrap(cfg.Faults), Seed: cfg.Seed, QuietMin: cfg.QuietMin, QuietMax: cfg.QuietMax}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); res.Faults = sched.Run(work, env); res.Aims = sched.Aims() }()
	logf("seed %d: workloads and faults for %v", cfg.Seed, cfg.Duration)
	<-work.Done()
	wg.Wait()

	healCtx, cancel := context.WithTimeout(hard, 20*time.Second)
	if err := failpoint.HealAll(healCtx, env); err != nil {
		rec.Eventf("heal all: %v", err)
	}
	cancel()
	faults.endAll()
	rec.Eventf("healed everything")
	if _, err := c.WaitLeader(hard, 30*time.Second); err != nil {
		rec.Eventf("no leader 30s after healing: %v", err)
	}
	tr.Wait()
	rec.Eventf("workloads stopped")
	classic := cfg.Election != "" && cfg.Election != "raft"
	var quiet *validate.QuietWindow
	if !classic { // nothing is replicated in the classic modes
		rec.Eventf("%s", staleLagPhase(hard, c, rec))
		w := quietWindow(hard, c, rec)
		quiet = &w
	}
	logf("seed %d: final reads, then kill -9 and restart of every node", cfg.Seed)
	durable, survived := checkDurability(hard, c, cfg.Binary, rec)
	stopPoll()
	poll.wait()
	probe.wait()
	leases, unreadable := readLeaseLogs(c, rec.Eventf)

	ops := rec.Ops()
	res.Ops, res.History = len(ops), ops
	res.Stats = tr.Stats()
	res.Stats["sessions across restart"] = survived
	res.Events = rec.Events()
	ev := Evidence{Ops: ops, Holds: rec.Holds(), Events: res.Events, Durability: durable, Samples: poll.samples(),
		Classic: classic, Dir: cfg.Dir, StaleReads: rec.StaleReads(), Acks: rec.Acks(), Quiet: quiet,
		Leases: leases, LeaseUnreadable: unreadable, Retries: tr.Retries(), Workloads: append([]string{}, cfg.Workloads...),
		Faults: faults.Windows(), Aims: res.Aims, Probes: probe.probes(), KV: tr.KV()}
	if r := tr.Resource(); r != nil {
		ev.Fenced = true
		ev.Grants = r.Grants()
		ev.Writes = r.Writes()
	}
	res.Verdicts = Check(ev)
	if err := SaveEvidence(cfg.Dir, ev); err != nil {
		logf("seed %d: %v", cfg.Seed, err)
	}
	return res
}

// Evidence is everything a run gathered for its checkers.
//
// A run saves it (but Ops, which go to history.jsonl, and Dir) in its
// directory as EvidenceFile, so that "jepsen --check" can run every
// checker again; a field added here is saved with it.
type Evidence struct {
	Ops    []history.Op `json:"-"`
	Holds  []history.Hold
	Events []history.Event
	// Fenced is set when the fenced workload ran; Grants and Writes are
	// its resource's grants (the child clients' among them) and log.
	Fenced bool
	Grants []traffic.Grant
	Writes []traffic.Write
	// Durability is the verdict checkDurability reached on the live
	// cluster.
	Durability validate.Verdict
	Samples    []validate.Sample
	// Leases are every node's lease log lines, LeaseUnreadable how many
	// lines did not parse.
	Leases          []validate.LeaseLine
	LeaseUnreadable int
	// Probes are the lease reads each node answered itself, the
	// master-lease checker's outside witness (prober).
	Probes []validate.LeaseProbe
	// Classic is set for the election modes without Raft terms.
	Classic bool
	// Dir receives the checkers' artifacts.
	Dir string `json:"-"`
	// LinearizeTimeout bounds the linearizability check (0: 2 minutes).
	LinearizeTimeout time.Duration `json:"-"`
	// StaleReads and Acks are the ?stale reads and the acknowledged writes
	// (the ?consistent reads' indexes during the run, and one write once
	// the cluster was healed and caught up), for the stale-reads checker.
	StaleReads []history.StaleRead
	Acks       []history.Ack
	// Quiet is the window in which only keepalives ran (nil: none held).
	Quiet *validate.QuietWindow
	// Retries are the request-number worker's requests.
	Retries []traffic.Retry
	// Aims are the aimed faults' cycles and how many reached their aim.
	Aims map[string]failpoint.Aim
	// Faults are the windows in which each fault of the schedule was in
	// force.
	Faults []validate.FaultWindow
	// KV is what the namespace workload saw.
	KV traffic.KVEvidence
	// Workloads are the workloads the run was asked to run; nil (the
	// evidence of an older run) counts as every workload. A checker whose
	// workload was not asked for is not in force (Verdict.Off).
	Workloads []string
}

// ran reports whether the run was asked to run workload w.
func (ev *Evidence) ran(w string) bool {
	return ev.Workloads == nil || slices.Contains(ev.Workloads, w)
}

// ranAny reports whether the run was asked to run any of workloads.
func (ev *Evidence) ranAny(workloads ...string) bool {
	return slices.ContainsFunc(workloads, func(w string) bool { return ev.ran(w) })
}

// Check runs every checker on a run's evidence and returns their
// verdicts. A checker whose workload the run was not asked to run, or
// whose promise the election mode does not make, is not in force (Off);
// one in force that found nothing to check is undecided.
func Check(ev Evidence) []validate.Verdict {
	var out []validate.Verdict
	// The fenced lock's child clients are not in the history: their
	// reported grants stand in for them. Elections are checked against
	// their own model, with values.
	lin := validate.WithChildGrants(ev.Ops, traffic.FencedLock, ev.Grants)
	elections := map[string]bool{traffic.ElectionName: true, traffic.EtcdElectionName: true}
	skip := map[string]bool{traffic.ElectionName: true, traffic.EtcdElectionName: true}
	timeout := cmp.Or(ev.LinearizeTimeout, 2*time.Minute)
	elect := validate.CheckElections(ev.Ops, elections, timeout, ev.Dir)
	if ev.ran(traffic.Elections) && elect.Checked == 0 && elect.Undecided == "" {
		elect.Undecided = "the elections workload ran, yet no election operation was recorded"
	}
	// Evidence from before the etcd workload names no workloads.
	if slices.Contains(ev.Workloads, traffic.Etcd) && elect.Undecided == "" {
		if missing := etcdMissing(ev.Ops); missing != "" {
			elect.Undecided = "the " + traffic.Etcd + " workload ran, yet " + missing
		}
	}
	// The checkers of locks and elections are not in force in a run of
	// the namespace workload alone.
	lockChecker := func(v validate.Verdict) validate.Verdict {
		if !ev.ranAny(traffic.Locks, traffic.PlainLocks, traffic.Fenced, traffic.Elections, traffic.Expiry, traffic.Etcd) {
			return v.NotInForce("no workload of locks or elections was run")
		}
		return v
	}
	out = append(out, lockChecker(validate.MergeVerdicts(validate.CheckLinearizable(lin, skip, timeout, ev.Dir), elect)))
	var extra []validate.ExtraGrant
	for _, g := range ev.Grants {
		extra = append(extra, validate.ExtraGrant{Lock: traffic.FencedLock, Session: g.Session, Token: g.Token, Call: g.Call, Return: g.Return})
	}
	// The lock workload's guarantees (queues, lock-delays, request
	// numbers) have workers of its own; plain-locks runs none of them.
	lockGuarantees := func(v validate.Verdict) validate.Verdict {
		if !ev.ran(traffic.Locks) {
			return v.NotInForce("the " + traffic.Locks + " workload, whose workers it checks, was not run")
		}
		return v
	}
	// Lease timing compares acquires with the beliefs of lockd's client
	// library; the etcd workload's client records none.
	leaseTiming := validate.CheckLeaseTiming(ev.Ops, ev.Holds, ev.Grants...)
	if !ev.ranAny(traffic.Locks, traffic.PlainLocks, traffic.Fenced, traffic.Elections, traffic.Expiry) {
		leaseTiming = leaseTiming.NotInForce("no workload of lockd's client library ran")
	}
	out = append(out, lockChecker(validate.CheckTokens(ev.Ops, extra)), leaseTiming,
		lockGuarantees(validate.CheckFIFO(ev.Ops)), lockGuarantees(validate.CheckQueue(ev.Ops)), lockGuarantees(validate.CheckLockDelay(ev.Ops)))
	fv := validate.CheckFencing(ev.Writes, ev.Grants)
	if !ev.ran(traffic.Fenced) {
		fv = fv.NotInForce("the " + traffic.Fenced + " workload was not run")
	}
	stale := validate.CheckStale(validate.StaleEvidence{Reads: ev.StaleReads, Acks: ev.Acks, Samples: ev.Samples, Faults: ev.Faults},
		validate.StaleLag)
	if ev.Classic {
		stale = stale.NotInForce("classic mode: each tenure starts from empty state, so ?stale reads promise nothing")
	}
	out = append(out, fv, ev.Durability, validate.CheckLeaders(ev.Samples, ev.Classic),
		masterLease(ev), validate.CheckEvents(ev.Events), stale)
	quiet := validate.Verdict{Checker: validate.QuietKeepalives, Undecided: "no quiet window held"}
	switch {
	case ev.Classic:
		quiet = quiet.NotInForce("classic mode: nothing is replicated, so there is no commit index to watch")
	case ev.Quiet != nil:
		quiet = validate.CheckQuiet(*ev.Quiet)
	}
	out = append(out, quiet, lockGuarantees(validate.CheckRequestNumbers(ev.Retries)))
	out = append(out, namespace(ev, timeout)...)
	if len(ev.Aims) > 0 {
		out = append(out, CheckAims(ev.Aims))
	}
	return out
}

// etcdMissing says which of the etcd workload's kinds of evidence the
// history lacks: a grant of its lock and a campaign won, each seen by a
// read; "" when it has them all.
func etcdMissing(ops []history.Op) string {
	var grants, campaigns, lockReads, leaderReads int
	for _, op := range ops {
		if op.Status != history.OK {
			continue
		}
		switch {
		case op.Lock == traffic.EtcdMutexName && op.Kind == history.Acquire:
			grants++
		case op.Lock == traffic.EtcdMutexName && op.Kind == history.Read && op.Holder != "":
			lockReads++
		case op.Lock == traffic.EtcdElectionName && op.Kind == history.Acquire:
			campaigns++
		case op.Lock == traffic.EtcdElectionName && op.Kind == history.Read && op.Holder != "":
			leaderReads++
		}
	}
	var missing []string
	for _, m := range []struct {
		n    int
		what string
	}{{grants, "no Mutex grant"}, {lockReads, "no read of the Mutex's holder"}, {campaigns, "no campaign won"}, {leaderReads, "no read of a leader"}} {
		if m.n == 0 {
			missing = append(missing, m.what)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "its client recorded " + strings.Join(missing, ", ")
}

// namespace is the verdicts of the namespace workload's checkers, not in
// force when the workload did not run.
func namespace(ev Evidence, timeout time.Duration) []validate.Verdict {
	kv := ev.KV
	out := []validate.Verdict{validate.CheckKV(kv.Ops, timeout, ev.Dir), validate.CheckWatches(kv.Watches, kv.Writes),
		validate.CheckEphemeral(kv.Ephemeral, kv.EphReads), validate.CheckFencedWrites(kv.Grants, kv.Fenced)}
	if !ev.ran(traffic.Namespace) || ev.Workloads == nil && len(kv.Ops) == 0 {
		for i := range out {
			out[i] = out[i].NotInForce("the " + traffic.Namespace + " workload was not run")
		}
	}
	return out
}

// masterLease is the master-lease verdict: the nodes' lease logs, and the
// probes as an outside witness of them.
func masterLease(ev Evidence) validate.Verdict {
	v := validate.CheckMasterLease(ev.Leases, ev.LeaseUnreadable, ev.Classic)
	if ev.Classic {
		return v
	}
	return validate.CheckLeaseProbes(v, ev.Leases, ev.Probes)
}

func nodeIDs(c *proccluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.ID)
	}
	return out
}

// electionTimeout is the Raft candidate timeout the nodes run with: the
// value of --election-timeout in args, else lockd's default.
func electionTimeout(args []string) time.Duration {
	return durationFlag(args, "election-timeout", lease.DefaultConfig().ElectionTimeout)
}

// leaderLeaseTimeout is the Raft leader lease timeout the nodes run with:
// the value of --leader-lease-timeout in args, else lockd's default.
func leaderLeaseTimeout(args []string) time.Duration {
	return durationFlag(args, "leader-lease-timeout", lease.DefaultConfig().LeaderLeaseTimeout)
}

// heartbeatTimeout is the Raft follower timeout the nodes run with: the
// value of --heartbeat-timeout in args, else lockd's default.
func heartbeatTimeout(args []string) time.Duration {
	return durationFlag(args, "heartbeat-timeout", lease.DefaultConfig().HeartbeatTimeout)
}

// durationFlag is the last value of the duration flag name in args, else
// def.
func durationFlag(args []string, name string, def time.Duration) time.Duration {
	d := def
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-") // flags take one dash or two
		v, ok := strings.CutPrefix(a, "-"+name+"=")
		if !ok && a == "-"+name && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if x, err := time.ParseDuration(v); ok && err == nil {
			d = x
		}
	}
	return d
}

// withoutEtcd returns the run's workloads without the etcd workload where
// it cannot run (lockd serves etcd's API in Raft mode only, and its child
// speaks neither TLS nor tokens yet), and a note of why it was left out.
func withoutEtcd(cfg Config) ([]string, string) {
	if !slices.Contains(cfg.Workloads, traffic.Etcd) {
		return cfg.Workloads, ""
	}
	why := ""
	switch {
	case cfg.Election != "" && cfg.Election != "raft":
		why = "the " + cfg.Election + " mode serves no etcd API"
	case cfg.Secure:
		why = "its client speaks neither TLS nor tokens yet"
	case cfg.EtcdClient == "":
		why = "no etcd client child was built"
	default:
		return cfg.Workloads, ""
	}
	return slices.DeleteFunc(slices.Clone(cfg.Workloads), func(w string) bool { return w == traffic.Etcd }),
		"the " + traffic.Etcd + " workload is left out of this run: " + why
}

// trafficConfig configures the run's workloads on cluster c; on a secured
// cluster they speak TLS and make their tokens through the admin token.
func trafficConfig(cfg Config, c *proccluster.Cluster, rec *history.Recorder) traffic.Config {
	tc := traffic.Config{Endpoints: c.Endpoints(), NodeIDs: nodeIDs(c), Recorder: rec, Seed: cfg.Seed,
		TTL: cfg.TTL, MaxClockDrift: maxClockDrift(cfg.ServeArgs), Workloads: cfg.Workloads, NoFencing: cfg.NoFencing, Binary: cfg.Self, Env: cfg.SelfEnv,
		LogDir: cfg.Dir, Proc: func(i int) int { return c.Nodes[i].PID() },
		TLS: c.ClientTLS(), CAFile: c.TLSFile(certs.CAFile), CertFile: c.TLSFile(certs.ClientFile), KeyFile: c.TLSFile(certs.ClientKeyFile),
		EtcdClient: cfg.EtcdClient}
	for _, n := range c.Nodes {
		if n.Etcd != "" {
			tc.EtcdEndpoints = append(tc.EtcdEndpoints, n.Etcd)
		}
	}
	if c.AdminToken() != "" {
		tc.NewToken = func(ctx context.Context, description string, rules []acl.Rule) (string, error) {
			tok, err := c.CreateToken(ctx, api.CreateTokenRequest{Description: description, Rules: rules})
			return tok.Secret, err
		}
	}
	return tc
}
