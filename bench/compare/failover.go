package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockd/lockd/bench/failover"
	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/internal/ctxsleep"
)

// Failover is one system's failover trials: the leader killed with
// SIGKILL under a lock load, and the time from the signal to the first
// lock taken through a survivor.
type Failover struct {
	Started time.Time `json:"started"`
	// Trials is the number of trials run; Workers the background lock
	// workers over all members; Settle how long the whole cluster ran
	// before each trial.
	Trials  int     `json:"trials"`
	Workers int     `json:"workers"`
	Settle  float64 `json:"settle_seconds"`
	// Kill times a session created before the kill, as lockd's own
	// `lockd-bench failover` does: the row and the target use it.
	Kill Times `json:"kill"`
	// NewSession (ZooKeeper only) times, over the same kills, tries that
	// each open a new session to one survivor.
	NewSession *Times `json:"new_session,omitempty"`
	// Killed is the endpoint of the member killed in each trial, where
	// known.
	Killed []string `json:"killed,omitempty"`
	// LoadCycles and LoadErrors are the background workers' completed
	// lock cycles and failed requests (expected while there is no
	// leader).
	LoadCycles int64 `json:"load_cycles"`
	LoadErrors int64 `json:"load_errors"`
}

// Times are the failover times of a set of trials.
type Times struct {
	// Times are the successful trials' times, in order.
	Times []time.Duration `json:"times_ns"`
	// Failed trials saw no lock taken within the give-up time.
	Failed int `json:"failed"`
}

// Stats returns the smallest, median (the lower one of an even count, as
// `lockd-bench failover` takes it) and largest time; ok is false without
// a successful trial.
func (t Times) Stats() (lo, p50, hi time.Duration, ok bool) {
	if len(t.Times) == 0 {
		return 0, 0, 0, false
	}
	s := slices.Sorted(slices.Values(t.Times))
	return s[0], s[(len(s)-1)/2], s[len(s)-1], true
}

// FailoverHow says how the failover trials are run, for the report.
const FailoverHow = "each system at its default timing settings (etcd: heartbeat 100 ms, election 1000 ms; " +
	"ZooKeeper: tickTime 2000; lockd: `lockd serve`'s defaults, on a 3-node cluster of its own that " +
	"`lockd-bench failover` starts). A trial waits until every member is up and one leads, lets the cluster " +
	"settle, creates a session through a survivor, kills the leader with SIGKILL, and from then on tries " +
	"to take a lock of a fresh name through every survivor every 10 ms (each try bounded to 2 s) until " +
	"one succeeds: the trial's time runs from the signal to that answer. The killed member is then " +
	"restarted on its data. Background workers take and release locks on every member all the while. " +
	"etcd: Mutex.TryLock on a fresh key, one client per survivor sharing one concurrency.Session; " +
	"ZooKeeper: the lock recipe's create (an ephemeral sequential node) of a fresh name, through one " +
	"zk.Conn to the survivors (one try every 10 ms: the connection talks to one survivor at a time); lockd: an acquire with wait 0. The load lines are context, not a " +
	"comparison: how soon a request fails while there is no leader, and so how many fail, differs by client."

// ZooKeeperFailoverColumns says what ZooKeeper's two failover columns
// time.
const ZooKeeperFailoverColumns = "the min/p50/max lines time a session created before the kill, like " +
	"lockd's and etcd's, and the target uses them: a follower drops its clients when the leader goes, and " +
	"go-zookeeper reconnects in rounds over the survivors with a 1 s sleep between rounds, so that session " +
	"cannot come back much sooner than about 1 s. The new-session lines time, over the same kills, tries " +
	"that each open a new session to one survivor (at most 20 at a time per survivor, within ZooKeeper's " +
	"default limit of 60 connections per client address) and then create: when the ensemble serves again, as a " +
	"client that starts afresh sees it"

// FailoverOptions say how to time failover on one system.
type FailoverOptions struct {
	System  string
	Version string
	// Endpoints are etcd's or ZooKeeper's client addresses (host:port),
	// in member order; PIDFiles name each member's process, in the same
	// order; Restart is the command that starts member {i} (numbered
	// from 1) again, as the cluster's start script started it.
	Endpoints []string
	PIDFiles  []string
	Restart   []string
	// Binary and Dir are for lockd: the lockd binary `lockd-bench
	// failover`'s cluster runs, and the directory for its nodes' data.
	Binary, Dir string
	Trials      int
	Workers     int
	Settle      time.Duration
	// TTL is the background sessions' and the probing session's TTL.
	TTL      time.Duration
	Progress func(string)
}

// Failover bounds.
const (
	tryEvery   = 10 * time.Millisecond // a try through each survivor this often
	tryLimit   = 2 * time.Second       // each try bounded to this
	giveUp     = 30 * time.Second      // a trial without a lock taken by then fails
	wholeLimit = 90 * time.Second      // for every member to be up, with one leader
)

// DefaultFailoverOptions are lockd's `lockd-bench failover` defaults
// (workers, settle) with 5 trials.
func DefaultFailoverOptions() FailoverOptions {
	d := failover.DefaultConfig()
	return FailoverOptions{Trials: 5, Workers: d.Workers, Settle: d.Settle, TTL: 30 * time.Second}
}

// Validate checks the options.
func (o FailoverOptions) Validate() error {
	switch {
	case o.Trials < 1 || o.Trials > 100:
		return fmt.Errorf("failover trials %d out of range 1..100", o.Trials)
	case o.Workers < 0 || o.Workers > 256:
		return fmt.Errorf("failover workers %d out of range 0..256", o.Workers)
	case o.Settle < 0 || o.Settle > time.Minute:
		return fmt.Errorf("failover settle %v out of range 0..1m", o.Settle)
	case o.TTL < 5*time.Second || o.TTL > 10*time.Minute:
		return fmt.Errorf("failover ttl %v out of range 5s..10m", o.TTL)
	}
	switch o.System {
	case Lockd:
		if o.Binary == "" || o.Dir == "" {
			return errors.New("lockd's failover needs the lockd binary and a directory for its cluster")
		}
	case Etcd, ZooKeeper:
		if len(o.Endpoints) != 3 || len(o.PIDFiles) != len(o.Endpoints) || len(o.Restart) == 0 {
			return fmt.Errorf("%s's failover needs 3 endpoints, a PID file for each and a restart command", o.System)
		}
	default:
		return fmt.Errorf("unknown system %q (want %s, %s or %s)", o.System, Lockd, Etcd, ZooKeeper)
	}
	return nil
}

// RunFailover runs the failover trials on opts.System and returns them as
// a Result (no rows, its Failover set). The result holds the trials run
// before an error, and the error's text.
func RunFailover(ctx context.Context, opts FailoverOptions) (Result, error) {
	res := Result{System: opts.System, Version: opts.Version, Started: time.Now().UTC()}
	f := &Failover{Started: res.Started, Workers: opts.Workers, Settle: opts.Settle.Seconds()}
	res.Failover = f
	if err := opts.Validate(); err != nil {
		res.Error = err.Error()
		return res, err
	}
	var err error
	if opts.System == Lockd {
		err = lockdFailover(ctx, opts, f)
	} else {
		err = peerFailover(ctx, opts, f)
	}
	if err != nil {
		res.Error = "failover: " + err.Error()
	}
	return res, err
}

// lockdFailover is `lockd-bench failover --faults kill` (internal/
// bench/failover) on a cluster of its own: 127.0.0.1 or 127.x.y.z loopback
// addresses, ports between 10000 and the ephemeral range, so never the
// comparison's own (which are below 8000).
func lockdFailover(ctx context.Context, opts FailoverOptions, f *Failover) error {
	cfg := failover.DefaultConfig()
	cfg.Binary, cfg.Dir, cfg.Trials, cfg.Kinds = opts.Binary, opts.Dir, opts.Trials, []string{"kill"}
	if abs, err := filepath.Abs(cfg.Binary); err == nil {
		cfg.Binary = abs
	}
	cfg.Workers, cfg.Settle = opts.Workers, opts.Settle
	if p := opts.Progress; p != nil {
		cfg.Progress = func(line string) { p(Lockd + ": " + line) }
	}
	rows, err := failover.Run(ctx, cfg)
	for _, r := range rows {
		if r.Kind == "kill" {
			f.Trials = r.Trials
			f.Kill = Times{Times: r.Times, Failed: r.Failed}
			f.LoadCycles, f.LoadErrors = r.LoadCycles, r.LoadErrors
		}
	}
	return err
}

// peer is etcd or ZooKeeper during failover trials.
type peer interface {
	// whole returns nil if every member answers and one of them leads.
	whole(ctx context.Context) error
	// prepare creates the probing session(s) through the survivors (the
	// endpoints' indexes), before the kill; the tries take locks under
	// prefix, a fresh name each.
	prepare(ctx context.Context, survivors []int, prefix string) (prober, error)
}

// A prober tries to take a lock through the survivors after the kill.
// Column 0 is the session made before the kill; ZooKeeper has a column
// 1, a new session per try.
type prober interface {
	// channels is how many tries column col sends per round (one per
	// survivor, or one for a single connection to them all), and limit how
	// many of a channel's tries may be in flight at once.
	channels(col int) (n, limit int)
	// try tries once through channel ch of column col; nil if the lock
	// was taken.
	try(ctx context.Context, col, ch int, k uint64) error
	// close ends the sessions; it returns once every try has returned.
	close()
}

func peerFailover(ctx context.Context, opts FailoverOptions, f *Failover) error {
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			opts.Progress(Title(opts.System) + ": " + fmt.Sprintf(format, args...))
		}
	}
	var p peer
	switch opts.System {
	case Etcd:
		p = &etcdPeer{endpoints: opts.Endpoints, ttl: opts.TTL}
	case ZooKeeper:
		p = &zkPeer{servers: opts.Endpoints, ttl: opts.TTL}
		f.NewSession = &Times{}
	}
	sys, err := open(opts.System, opts.Endpoints)
	if err != nil {
		return err
	}
	defer func() { _ = sys.Close() }()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	ld := startLoad(ctx, sys, opts.Workers, opts.TTL, run)
	defer func() {
		f.LoadCycles, f.LoadErrors = ld.stop()
	}()
	for i := range opts.Trials {
		times, killed, err := peerTrial(ctx, opts, p, run, i)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var broken errBroken
		if errors.As(err, &broken) {
			return err
		}
		f.Trials++
		if killed != "" {
			f.Killed = append(f.Killed, killed)
		}
		record := func(t *Times, col int) string {
			if col < len(times) && times[col] > 0 {
				t.Times = append(t.Times, times[col])
				return times[col].Round(time.Millisecond).String()
			}
			t.Failed++
			return "failed"
		}
		line := fmt.Sprintf("failover kill %d/%d (killed %s): %s", i+1, opts.Trials, orDash(killed), record(&f.Kill, 0))
		if f.NewSession != nil {
			line += ", new session per try " + record(f.NewSession, 1)
		}
		if err != nil {
			line += ": " + err.Error()
		}
		progress("%s", line)
	}
	return nil
}

// errBroken is a trial that went wrong before its kill (the cluster did
// not come back whole, say): the trials stop there.
type errBroken struct{ error }

func (e errBroken) Unwrap() error { return e.error }

// peerTrial runs one trial: it waits for a whole cluster and lets it
// settle, kills the leader, times each column's first lock, and restarts
// the killed member. A column's time is 0 if it took no lock.
func peerTrial(ctx context.Context, opts FailoverOptions, p peer, run string, trial int) ([]time.Duration, string, error) {
	leader, err := settled(ctx, opts, p)
	if err != nil {
		return nil, "", errBroken{err}
	}
	var survivors []int
	for i := range opts.Endpoints {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	prepCtx, prepCancel := context.WithTimeout(ctx, 10*time.Second)
	pr, err := p.prepare(prepCtx, survivors, fmt.Sprintf("/bench/failover/%s/t%d", run, trial))
	prepCancel()
	if err != nil {
		return nil, "", errBroken{fmt.Errorf("the probing session: %w", err)}
	}
	pctx, cancel := context.WithTimeout(ctx, giveUp)
	defer cancel()
	pid, err := memberPID(opts.PIDFiles[leader])
	if err != nil {
		pr.close()
		return nil, "", errBroken{err}
	}
	t0 := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		pr.close()
		return nil, "", errBroken{fmt.Errorf("kill -9 %d: %w", pid, err)}
	}
	killed := opts.Endpoints[leader]
	times := probe(pctx, pr, t0)
	cancel()
	pr.close()
	if err := restart(ctx, opts, leader, pid); err != nil {
		return times, killed, err
	}
	var missing error
	for _, d := range times {
		if d == 0 {
			missing = fmt.Errorf("no lock taken through a survivor within %v", giveUp)
		}
	}
	return times, killed, missing
}

// settled waits until the cluster is whole, lets it settle, and returns
// the leader's index.
func settled(ctx context.Context, opts FailoverOptions, p peer) (int, error) {
	deadline := time.Now().Add(wholeLimit)
	var err error
	for {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = p.whole(wctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return -1, fmt.Errorf("the cluster was not whole within %v: %w", wholeLimit, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	sleep(ctx, opts.Settle)
	for {
		i, err := leaderOf(ctx, opts.System, opts.Endpoints)
		if err == nil {
			return i, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return -1, fmt.Errorf("no leader within %v: %w", wholeLimit, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// probe sends a try through every channel of every column every 10 ms,
// until each column has taken a lock or ctx ends, and returns each
// column's time from t0 to its first lock (0 if none).
func probe(ctx context.Context, pr prober, t0 time.Time) []time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // ends the tries still under way
		wg.Wait()
	}()
	ncols := 1
	if n, _ := pr.channels(1); n > 0 {
		ncols = 2
	}
	times := make([]time.Duration, ncols)
	var mu sync.Mutex
	won := make(chan struct{}, 1)
	var seq atomic.Uint64
	inflight := make([][]atomic.Int32, ncols)
	for c := range ncols {
		n, _ := pr.channels(c)
		inflight[c] = make([]atomic.Int32, n)
	}
	tick := time.NewTicker(tryEvery)
	defer tick.Stop()
	for {
		for c := range ncols {
			mu.Lock()
			done := times[c] > 0
			mu.Unlock()
			if done {
				continue
			}
			n, limit := pr.channels(c)
			for ch := range n {
				if int(inflight[c][ch].Load()) >= limit {
					continue
				}
				inflight[c][ch].Add(1)
				k := seq.Add(1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer inflight[c][ch].Add(-1)
					tctx, tcancel := context.WithTimeout(ctx, tryLimit)
					defer tcancel()
					if pr.try(tctx, c, ch, k) != nil {
						return
					}
					d := time.Since(t0)
					mu.Lock()
					if times[c] == 0 {
						times[c] = d
					}
					mu.Unlock()
					select {
					case won <- struct{}{}:
					default:
					}
				}()
			}
		}
		select {
		case <-won:
			mu.Lock()
			all := !slices.Contains(times, 0)
			mu.Unlock()
			if all {
				return times
			}
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(times)
		case <-tick.C:
		}
	}
}

// memberPID reads a member's PID file and checks that the process runs
// and is the member: its command line names the PID file's directory (so
// a PID reused by an unrelated process is never signalled).
func memberPID(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("%s: no PID in %q", file, b)
	}
	if !running(pid) {
		return 0, fmt.Errorf("%s: process %d is not running", file, pid)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, err
	}
	dir := filepath.Dir(file)
	abs, _ := filepath.Abs(dir)
	line := strings.ReplaceAll(string(cmdline), "\x00", " ")
	if !strings.Contains(line, dir+"/") && !strings.Contains(line, abs+"/") {
		return 0, fmt.Errorf("%s: process %d (%.80s) is not a member kept under %s", file, pid, line, dir)
	}
	return pid, nil
}

// running says whether the process exists and has not exited (an exited
// process stays a zombie until its parent reaps it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// restart waits until the killed member's process is gone, then runs the
// restart command for it (bounded to a minute).
func restart(ctx context.Context, opts FailoverOptions, member, pid int) error {
	for deadline := time.Now().Add(10 * time.Second); running(pid); {
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still runs 10 s after SIGKILL", pid)
		}
		sleep(ctx, 20*time.Millisecond)
	}
	args := make([]string, len(opts.Restart))
	for i, a := range opts.Restart {
		args[i] = strings.ReplaceAll(a, "{i}", strconv.Itoa(member+1))
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, args[0], args[1:]...)
	// Files, not pipes: the member started in the background must not
	// hold a pipe this process waits on.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restart of member %d (%s): %w", member+1, strings.Join(args, " "), err)
	}
	return nil
}

// sleep sleeps for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) { _ = ctxsleep.Sleep(ctx, d) }

// bgLoad is the background lock traffic during the trials, as `lockd
// bench failover` runs it: each worker takes and releases a lock of its
// own through its member (worker w on endpoint w mod n), with a new
// session whenever its own has gone or fails it.
type bgLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errors atomic.Int64
	cycles atomic.Int64
}

func startLoad(ctx context.Context, sys load.System, workers int, ttl time.Duration, run string) *bgLoad {
	ctx, cancel := context.WithCancel(ctx)
	ld := &bgLoad{cancel: cancel}
	op := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, tryLimit) }
	for w := range workers {
		name := fmt.Sprintf("bench/failover/%s/load-%d", run, w)
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			var s load.Session
			end := func() {
				dctx, dcancel := context.WithTimeout(context.Background(), tryLimit)
				_ = s.Destroy(dctx) // best effort: the session expires anyway
				dcancel()
				s = nil
			}
			for ctx.Err() == nil {
				if s == nil {
					octx, ocancel := op()
					var err error
					s, err = sys.NewSession(octx, w, ttl)
					ocancel()
					if err != nil {
						s = nil
						if ctx.Err() == nil {
							ld.errors.Add(1)
						}
						sleep(ctx, 50*time.Millisecond)
						continue
					}
				}
				octx, ocancel := op()
				err := s.TryAcquire(octx, name)
				if err == nil {
					err = s.Release(octx, name)
				}
				ocancel()
				switch {
				case err == nil:
					ld.cycles.Add(1)
				case ctx.Err() == nil:
					ld.errors.Add(1)
					// The lock is the worker's own: held means a try whose
					// answer was lost took it. Start afresh.
					if errors.Is(err, load.ErrLockHeld) || errors.Is(err, load.ErrSessionExpired) {
						end()
					}
					sleep(ctx, 20*time.Millisecond)
				}
			}
			if s != nil {
				end()
			}
		}()
	}
	return ld
}

// stop ends the workers (waiting for them at most 15 s: a client call
// that ignores its context ends when its session is closed) and returns
// their cycles and errors.
func (ld *bgLoad) stop() (cycles, errs int64) {
	ld.cancel()
	done := make(chan struct{})
	go func() { ld.wg.Wait(); close(done) }()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return ld.cycles.Load(), ld.errors.Load()
}
