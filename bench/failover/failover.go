// Package failover measures failover: `lockd-bench failover` starts a
// cluster of lockd processes of its own, puts it under a lock load, and
// again and again kills the leader with SIGKILL (or stops it with
// SIGSTOP), timing how long it takes until an acquire succeeds through a
// surviving node.
//
// A trial: wait for a serving leader and let the cluster settle; create a
// session through a survivor; take the time t0 and signal the leader's
// process; from then on every survivor is sent a fresh acquire (wait 0, a
// name of its own, so it is always free) every 10 ms, each bounded to 2 s,
// until one succeeds at t1. The trial's failover time is t1 - t0: the time
// to notice the leader is gone, elect another, establish its master lease
// and serve a write, as a client that retries through another node sees
// it. The old leader is then restarted on its data (SIGKILL) or continued
// (SIGSTOP), and the next trial waits for the cluster to be whole again.
//
// Workers keep acquiring and releasing locks on every node for the whole
// run, so the leader dies with requests in flight; their errors during a
// failover are expected and are reported, not judged.
package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/ctxsleep"
	"github.com/lockd/lockd/test/proccluster"
)

// Config says what to run.
type Config struct {
	// Binary is the lockd to start; Dir holds the nodes' data and logs.
	Binary, Dir string
	// Nodes is the cluster size (3 or 5).
	Nodes int
	// Trials per kind of fault.
	Trials int
	// Kinds are the faults to time: "kill" (SIGKILL) and "stop" (SIGSTOP).
	Kinds []string
	// Workers run lock cycles over all nodes during the run.
	Workers int
	// Settle is how long a whole cluster runs before each trial.
	Settle time.Duration
	// Extra are more flags for every "lockd serve" (e.g. --heartbeat-timeout).
	Extra []string
	// Progress, if set, receives a line per trial.
	Progress func(string)
}

// DefaultConfig is 10 trials of each kind on 3 nodes under 8 workers.
func DefaultConfig() Config {
	return Config{Nodes: 3, Trials: 10, Kinds: []string{"kill", "stop"}, Workers: 8, Settle: 2 * time.Second}
}

// Validate checks the configuration but for Binary and Dir, which Run
// requires (a command checks its flags before it finds or builds a
// binary).
func (c Config) Validate() error {
	switch {
	case c.Nodes != 3 && c.Nodes != 5:
		return fmt.Errorf("nodes %d: want 3 or 5", c.Nodes)
	case c.Trials < 1 || c.Trials > 1000:
		return fmt.Errorf("trials %d out of range 1..1000", c.Trials)
	case c.Workers < 0 || c.Workers > 1024:
		return fmt.Errorf("workers %d out of range 0..1024", c.Workers)
	case len(c.Kinds) == 0:
		return errors.New("no fault kinds")
	}
	for _, k := range c.Kinds {
		if k != "kill" && k != "stop" {
			return fmt.Errorf("fault %q: want kill or stop", k)
		}
	}
	return nil
}

// Row is the result for one kind of fault.
type Row struct {
	Kind   string          `json:"kind"` // kill or stop
	Trials int             `json:"trials"`
	Times  []time.Duration `json:"times_ns"` // each trial's failover time, in order
	Min    time.Duration   `json:"min_ns"`
	P50    time.Duration   `json:"p50_ns"`
	Max    time.Duration   `json:"max_ns"`
	// Failed trials found no survivor that served an acquire in time.
	Failed int `json:"failed"`
	// LoadErrors are the workers' failed requests over the row (expected
	// while there is no leader); LoadCycles their completed cycles.
	LoadErrors int64 `json:"load_errors"`
	LoadCycles int64 `json:"load_cycles"`
}

// giveUp bounds one trial's wait for an acquire through a survivor.
const giveUp = 30 * time.Second

// Run starts the cluster, runs every kind's trials, and stops the cluster.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if cfg.Binary == "" || cfg.Dir == "" {
		return nil, errors.New("failover: Binary and Dir are required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := proccluster.New(proccluster.Config{Binary: cfg.Binary, Nodes: cfg.Nodes, Dir: cfg.Dir, Extra: cfg.Extra, Plain: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Start(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, c: c, run: fmt.Sprintf("%x", time.Now().UnixNano())}
	var rows []Row
	for _, kind := range cfg.Kinds {
		row, err := r.row(ctx, kind)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

type runner struct {
	cfg Config
	c   *proccluster.Cluster
	run string
}

func (r *runner) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(fmt.Sprintf(format, args...))
	}
}

func (r *runner) row(ctx context.Context, kind string) (Row, error) {
	row := Row{Kind: kind, Trials: r.cfg.Trials}
	ld := r.startLoad(ctx, kind)
	defer ld.stop()
	for i := range r.cfg.Trials {
		d, err := r.trial(ctx, kind, i)
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		if err != nil {
			row.Failed++
			r.progress("failover %s %d/%d: %v", kind, i+1, r.cfg.Trials, err)
			continue
		}
		row.Times = append(row.Times, d)
		r.progress("failover %s %d/%d: %v", kind, i+1, r.cfg.Trials, d.Round(time.Millisecond))
	}
	row.LoadErrors, row.LoadCycles = ld.errors.Load(), ld.cycles.Load()
	if len(row.Times) > 0 {
		s := slices.Sorted(slices.Values(row.Times))
		row.Min, row.P50, row.Max = s[0], s[(len(s)-1)/2], s[len(s)-1]
	}
	return row, nil
}

// trial runs one failover and returns its time.
func (r *runner) trial(ctx context.Context, kind string, i int) (time.Duration, error) {
	leader, err := r.whole(ctx)
	if err != nil {
		return 0, err
	}
	var survivors []*proccluster.Node
	for _, n := range r.c.Nodes {
		if n != leader {
			survivors = append(survivors, n)
		}
	}
	var s api.Session
	if err := survivors[0].Do(ctx, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(time.Minute)}, &s); err != nil {
		return 0, fmt.Errorf("create the probe session: %w", err)
	}
	t0 := time.Now()
	switch kind {
	case "kill":
		leader.Kill()
	case "stop":
		if err := leader.Pause(); err != nil {
			return 0, err
		}
	}
	d, err := r.probe(ctx, survivors, s.ID, fmt.Sprintf("bench/failover/%s/%s-%d", r.run, kind, i), t0)
	switch kind {
	case "kill":
		if serr := leader.Start(r.cfg.Binary); serr != nil && err == nil {
			err = serr
		}
	case "stop":
		if serr := leader.Resume(); serr != nil && err == nil {
			err = serr
		}
	}
	_ = survivors[0].Do(ctx, "DELETE", "/v1/sessions/"+s.ID, nil, nil)
	return d, err
}

// probe sends an acquire of a fresh name through every survivor every
// 10 ms until one succeeds, and returns the time from t0 to that answer.
func (r *runner) probe(ctx context.Context, survivors []*proccluster.Node, session, prefix string, t0 time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, giveUp)
	defer cancel()
	won := make(chan time.Duration, 1)
	var seq atomic.Uint64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, n := range survivors {
			k := seq.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := api.AcquireRequest{Session: session, Seq: k}
				if n.Do(ctx, "POST", fmt.Sprintf("/v1/locks/%s/%d/acquire", prefix, k), req, nil) == nil {
					select {
					case won <- time.Since(t0):
					default:
					}
				}
			}()
		}
		select {
		case d := <-won:
			return d, nil
		case <-ctx.Done():
			return 0, fmt.Errorf("no survivor served an acquire within %v", giveUp)
		case <-tick.C:
		}
	}
}

// whole waits until every node runs and one leads with its master lease,
// then lets the cluster settle, and returns the leader.
func (r *runner) whole(ctx context.Context) (*proccluster.Node, error) {
	deadline := time.Now().Add(giveUp)
	for {
		ready := 0
		for _, n := range r.c.Nodes {
			if n.Alive() && !n.Paused() && n.Do(ctx, "GET", "/readyz", nil, nil) == nil {
				ready++
			}
		}
		if ready == len(r.c.Nodes) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("the cluster was not whole again within %v", giveUp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = ctxsleep.Sleep(ctx, r.cfg.Settle)
	return r.c.WaitLeader(ctx, giveUp)
}

// load is the background lock traffic of a row.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errors atomic.Int64
	cycles atomic.Int64
}

// startLoad starts the workers: each creates a session through its node
// (round-robin) and takes and releases a lock of its own, with a new
// session whenever its own has gone (a failover may expire it).
func (r *runner) startLoad(ctx context.Context, kind string) *load {
	ctx, cancel := context.WithCancel(ctx)
	ld := &load{cancel: cancel}
	for w := range r.cfg.Workers {
		n := r.c.Nodes[w%len(r.c.Nodes)]
		name := fmt.Sprintf("bench/failover/%s/load-%s-%d", r.run, kind, w)
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			var session string
			var seq uint64
			for ctx.Err() == nil {
				if session == "" {
					var s api.Session
					if err := n.Do(ctx, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); err != nil {
						ld.errors.Add(1)
						_ = ctxsleep.Sleep(ctx, 50*time.Millisecond)
						continue
					}
					session = s.ID
				}
				seq += 2
				err := n.Do(ctx, "POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session, Seq: seq - 1}, nil)
				// Release even after a failed acquire: one whose outcome
				// was unknown may have taken the lock.
				if rerr := n.Do(ctx, "POST", "/v1/locks/"+name+"/release", api.SessionRequest{Session: session, Seq: seq}, nil); err == nil &&
					rerr != nil && api.CodeOf(rerr) != api.CodeNotHolder {
					err = rerr
				}
				switch {
				case err == nil:
					ld.cycles.Add(1)
				case ctx.Err() == nil:
					ld.errors.Add(1)
					if api.CodeOf(err) == api.CodeSessionExpired {
						session = ""
					}
					_ = ctxsleep.Sleep(ctx, 20*time.Millisecond)
				}
			}
		}()
	}
	return ld
}

func (ld *load) stop() {
	ld.cancel()
	ld.wg.Wait()
}

// Print writes rows as a table.
func Print(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "%-14s %6s %10s %10s %10s %7s %12s %12s\n", "bench", "trials", "min", "p50", "max", "failed", "load cycles", "load errors")
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %6d %10s %10s %10s %7d %12d %12d\n", "failover "+r.Kind, r.Trials,
			ms(r.Min), ms(r.P50), ms(r.Max), r.Failed, r.LoadCycles, r.LoadErrors)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
