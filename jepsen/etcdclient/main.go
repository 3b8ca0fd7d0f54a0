// Command etcdclient is the fault harness's etcd-client workload (the
// workload "etcd" of package traffic): etcd's own Go client and its
// concurrency recipes, concurrency.Mutex and concurrency.Election, run
// against lockd's etcd port while the harness injects faults, and checked
// by the harness's lock and election checkers.
//
// It is a module of its own so that lockd's module does not depend on
// etcd's client. The harness builds it and starts it as a child process
// (traffic.EtcdClient); it records every operation as a history.Op, one
// JSON line each, stamped on the harness's clock (history.ClockBase), in
// the file the harness names, and exits after its deadline once it has
// ended its leases.
//
// What it records, and why the checkers may hold it to lockd's lock model:
//
//   - A Mutex.Lock is an acquire whose token is the create revision of the
//     contender's key (a Raft index: a later grant has a higher one), read
//     back inside the operation; a Mutex.Unlock a release; a read of the
//     key under the lock's prefix created first, linearizable, a read of
//     the holder (the session a lease ID maps to in lockd, etcd-%016x).
//   - A Campaign is an acquire of the election with its value, Proclaim a
//     proclaim, Resign a release, Leader a read with the value.
//   - A call whose outcome is unknown is recorded unknown, and the worker
//     then ends that lease before it tries again; since etcd's recipes
//     clean up after a failed Lock or Campaign themselves (a delete of the
//     contender's key that may or may not land), a release of unknown
//     outcome is recorded from the call's start too. Nothing of a lease
//     can take effect after its revoke: when the cluster acknowledged the
//     revoke, its return bounds the lease's operations of unknown outcome.
//   - The leases are kept alive by the worker itself with KeepAliveOnce,
//     so that it knows when it sent each renewal the cluster answered: a
//     lease it loses ends (history.End) no earlier than the send time of
//     the last answered renewal (or the grant) plus its TTL, less the
//     clock-drift bound, which is the earliest moment lockd may expire it.
//     A lease it ends itself ends with its revoke.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/lockd/lockd/jepsen/history"
)

// Environment the harness starts the child with.
const (
	EnvEndpoints = "LOCKD_JEPSEN_ETCD_ENDPOINTS" // comma-separated host:port of every node's etcd port
	EnvOut       = "LOCKD_JEPSEN_ETCD_OUT"       // the file of operations
	EnvDeadline  = "LOCKD_JEPSEN_DEADLINE"       // unix milliseconds: start nothing after it
	EnvClockBase = "LOCKD_JEPSEN_CLOCK_BASE"     // history.ClockBase of the harness's recorder
	EnvTTL       = "LOCKD_JEPSEN_TTL"            // the leases' TTL, a Go duration (whole seconds, at least 1)
	EnvDrift     = "LOCKD_JEPSEN_DRIFT"          // the nodes' clock-drift bound, a fraction
	EnvSeed      = "LOCKD_JEPSEN_SEED"
	// Names the workers use, and the first client number of the history.
	EnvMutex    = "LOCKD_JEPSEN_ETCD_MUTEX"
	EnvElection = "LOCKD_JEPSEN_ETCD_ELECTION"
	EnvClient   = "LOCKD_JEPSEN_ETCD_CLIENT"
)

func main() { os.Exit(run()) }

type config struct {
	endpoints       []string
	out             string
	deadline        time.Time
	base            int64
	ttl             time.Duration
	drift           float64
	seed            uint64
	mutex, election string
	client          int
}

func readConfig() (config, error) {
	var c config
	var errs []error
	num := func(name string) int64 {
		v, err := strconv.ParseInt(os.Getenv(name), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return v
	}
	c.endpoints = strings.Split(os.Getenv(EnvEndpoints), ",")
	c.out = os.Getenv(EnvOut)
	c.deadline = time.UnixMilli(num(EnvDeadline))
	c.base = num(EnvClockBase)
	c.seed = uint64(num(EnvSeed)) //nolint:gosec // G115: a seed
	c.client = int(num(EnvClient))
	c.mutex, c.election = os.Getenv(EnvMutex), os.Getenv(EnvElection)
	var err error
	if c.ttl, err = time.ParseDuration(os.Getenv(EnvTTL)); err != nil || c.ttl < time.Second || c.ttl%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%s: %q is not a whole number of seconds (at least 1)", EnvTTL, os.Getenv(EnvTTL)))
	}
	if c.drift, err = strconv.ParseFloat(os.Getenv(EnvDrift), 64); err != nil || c.drift < 0 || c.drift >= 1 {
		errs = append(errs, fmt.Errorf("%s: %q is not a fraction", EnvDrift, os.Getenv(EnvDrift)))
	}
	if c.out == "" || c.mutex == "" || c.election == "" || c.endpoints[0] == "" {
		errs = append(errs, errors.New("the endpoints, the output file and the names are needed"))
	}
	return c, errors.Join(errs...)
}

func run() int {
	cfg, err := readConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdclient:", err)
		return 2
	}
	f, err := os.OpenFile(cfg.out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdclient:", err)
		return 1
	}
	defer func() { _ = f.Close() }()
	rec := &recorder{enc: json.NewEncoder(f), base: cfg.base}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdclient:", err)
		return 1
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithDeadline(context.Background(), cfg.deadline)
	defer cancel()
	var wg sync.WaitGroup
	start := func(n int, body func(w *worker)) {
		w := &worker{cfg: cfg, cli: cli, rec: rec, id: cfg.client + n, rng: rand.New(rand.NewPCG(cfg.seed, uint64(n)))} //nolint:gosec // G115: a worker number
		wg.Go(func() { body(w); w.endLease(errors.New("the run ended")) })
	}
	for i := range 3 {
		start(i, func(w *worker) { w.mutexLoop(ctx) })
	}
	start(3, func(w *worker) { w.reader(ctx, cfg.mutex, false) })
	for i := range 2 {
		start(4+i, func(w *worker) { w.campaignLoop(ctx) })
	}
	start(6, func(w *worker) { w.reader(ctx, cfg.election, true) })
	wg.Wait()
	if err := rec.err(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdclient: writing the history:", err)
		return 1
	}
	return 0
}

// recorder writes operations, stamped on the harness's clock.
type recorder struct {
	mu   sync.Mutex
	enc  *json.Encoder
	base int64
	e    error
}

func (r *recorder) now() int64 { return history.Monotonic() - r.base }

func (r *recorder) at(t time.Time) int64 { return r.now() - int64(time.Since(t)) }

func (r *recorder) add(op history.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.e == nil {
		r.e = r.enc.Encode(op)
	}
}

func (r *recorder) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e
}

// complete stamps op's completion with st, ok or fail, and records it.
// (Operations of unknown outcome wait for their lease's end: maybe.)
func (r *recorder) complete(op history.Op, st history.Status, err error) {
	op.Status = st
	op.Return = r.now()
	if err != nil {
		op.Err = err.Error()
	}
	r.add(op)
}

// callTimeout bounds every call but a blocking acquire or campaign.
const callTimeout = 2 * time.Second

// worker is one client of the workload, with at most one lease at a time.
type worker struct {
	cfg   config
	cli   *clientv3.Client
	rec   *recorder
	id    int
	rng   *rand.Rand
	lease *lease
	// unknown holds the operations of unknown outcome on the current
	// lease until it ends: every one is followed by the lease's end, and
	// none can take effect after a revoke the cluster acknowledged, so
	// endLease gives them that revoke's return as their own. (Left open,
	// each would stay pending to the end of the history, and the checker's
	// search grows with every one.)
	unknown []history.Op
}

// acquireFailed records a Lock or Campaign (op) that failed as of
// unknown outcome, with the recipe's clean-up (a delete of the
// contender's key, which may land at any time from the call on) as a
// release of unknown outcome, and ends the lease.
func (w *worker) acquireFailed(op history.Op, err error) {
	w.maybe(op, err)
	w.maybe(history.Op{Client: w.id, Lock: op.Lock, Kind: history.Release, Session: op.Session, Call: op.Call},
		errors.New("the recipe's clean-up"))
	w.endLease(fmt.Errorf("after an acquire or campaign of unknown outcome: %w", err))
}

// maybe records op as of unknown outcome, its return bounded by the end
// of the lease (endLease).
func (w *worker) maybe(op history.Op, err error) {
	op.Status, op.Return = history.Unknown, history.Infinity
	if err != nil {
		op.Err = err.Error()
	}
	w.unknown = append(w.unknown, op)
}

// lease is a worker's lease and what it knows of its renewals.
type lease struct {
	id      clientv3.LeaseID
	session *concurrency.Session
	names   []string // the locks and elections it was used with
	stop    context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	lastOK  time.Time // the send time of the grant or of the last renewal answered alive
	lost    bool      // a renewal answered that the lease is gone
}

// sessionName is the lockd session an etcd lease is.
func sessionName(id int64) string { return fmt.Sprintf("etcd-%016x", id) }

// ensureLease grants a lease if the worker has none, or ends a lost one
// first. It returns false if it could not.
func (w *worker) ensureLease(ctx context.Context) bool {
	if w.lease != nil && w.lease.aliveFor(w.cfg.ttl) {
		return true
	}
	if w.lease != nil {
		w.endLease(errors.New("lost"))
	}
	sent := time.Now()
	gctx, cancel := context.WithTimeout(ctx, callTimeout)
	g, err := w.cli.Grant(gctx, int64(w.cfg.ttl/time.Second))
	cancel()
	if err != nil {
		// A grant of unknown outcome leaves a lease nobody uses, which
		// lockd expires; nothing of it is in the history.
		return false
	}
	s, err := concurrency.NewSession(w.cli, concurrency.WithLease(g.ID), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return false
	}
	s.Orphan() // the worker renews the lease itself
	kctx, stop := context.WithCancel(context.Background())
	l := &lease{id: g.ID, session: s, stop: stop, done: make(chan struct{}), lastOK: sent}
	w.lease = l
	go w.keepAlive(kctx, l)
	return true
}

func (l *lease) aliveFor(ttl time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lost && time.Since(l.lastOK) < ttl
}

// keepAlive renews l every third of the TTL with KeepAliveOnce, noting
// the send time of each renewal answered alive, until stopped or told
// the lease is gone.
func (w *worker) keepAlive(ctx context.Context, l *lease) {
	defer close(l.done)
	every := w.cfg.ttl / 3
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		sent := time.Now()
		kctx, cancel := context.WithTimeout(ctx, every)
		r, err := w.cli.KeepAliveOnce(kctx, l.id)
		cancel()
		l.mu.Lock()
		switch {
		case err == nil && r.TTL > 0:
			l.lastOK = sent
		case err == nil, errors.Is(err, rpctypes.ErrLeaseNotFound):
			l.lost = true
		}
		lost := l.lost
		l.mu.Unlock()
		if lost {
			return
		}
	}
}

// endLease ends the worker's lease and records the end in the history of
// every lock and election it used: a lease still alive is revoked; a
// lost one ends no earlier than the cluster may have expired it.
func (w *worker) endLease(why error) {
	l := w.lease
	w.lease = nil
	if l == nil {
		for _, u := range w.unknown {
			w.rec.add(u)
		}
		w.unknown = nil
		return
	}
	l.stop()
	<-l.done
	l.mu.Lock()
	promise := l.lastOK.Add(time.Duration(float64(w.cfg.ttl) * (1 - w.cfg.drift)))
	alive := !l.lost && time.Now().Before(promise)
	l.mu.Unlock()
	op := history.Op{Client: w.id, Kind: history.End, Session: sessionName(int64(l.id)), Status: history.Unknown,
		Call: w.rec.at(promise), Return: history.Infinity, Err: why.Error()}
	if alive {
		call := w.rec.now()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		_, err := w.cli.Revoke(ctx, l.id)
		cancel()
		op.Call = min(op.Call, call)
		if err == nil {
			op.Status, op.Return, op.Err = history.OK, w.rec.now(), ""
		}
	}
	for _, name := range l.names {
		op.Lock = name
		w.rec.add(op)
	}
	for _, u := range w.unknown {
		if op.Status == history.OK {
			u.Return = op.Return
		}
		w.rec.add(u)
	}
	w.unknown = nil
}

// use notes that the lease was used with name.
func (l *lease) use(name string) {
	for _, n := range l.names {
		if n == name {
			return
		}
	}
	l.names = append(l.names, name)
}

// pause waits a random time below d, or until ctx ends.
func (w *worker) pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(w.rng.Int64N(int64(d)))):
	}
}

// mutexLoop takes the workload's lock with concurrency.Mutex, holds it a
// moment, and lets it go.
func (w *worker) mutexLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if !w.ensureLease(ctx) {
			w.pause(ctx, 200*time.Millisecond)
			continue
		}
		l := w.lease
		l.use(w.cfg.mutex)
		session := sessionName(int64(l.id))
		m := concurrency.NewMutex(l.session, w.cfg.mutex)
		op := history.Op{Client: w.id, Lock: w.cfg.mutex, Kind: history.Acquire, Session: session, Wait: 3 * time.Second, Call: w.rec.now()}
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := m.Lock(lctx)
		if err == nil {
			// The grant's token: the create revision of its key.
			var g *clientv3.GetResponse
			if g, err = w.cli.Get(lctx, m.Key()); err == nil && len(g.Kvs) == 1 {
				op.Token = uint64(g.Kvs[0].CreateRevision) //nolint:gosec // G115: a revision
			} else if err == nil {
				err = errors.New("the key of the grant is gone")
			}
		}
		cancel()
		if err != nil {
			w.acquireFailed(op, err)
			continue
		}
		w.rec.complete(op, history.OK, nil)
		w.pause(ctx, 150*time.Millisecond)
		rel := history.Op{Client: w.id, Lock: w.cfg.mutex, Kind: history.Release, Session: session, Call: w.rec.now()}
		uctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err = m.Unlock(uctx)
		cancel()
		if err != nil {
			w.maybe(rel, err)
			w.endLease(fmt.Errorf("after a release of unknown outcome: %w", err))
		} else {
			w.rec.complete(rel, history.OK, nil)
		}
		w.pause(ctx, 100*time.Millisecond)
	}
}

// reader reads, linearizably, the holder of name (the workload's lock or
// election): the key under its prefix created first, its lease's session,
// its create revision as the token and, for the election, its value.
func (w *worker) reader(ctx context.Context, name string, withValue bool) {
	for ctx.Err() == nil {
		op := history.Op{Client: w.id, Lock: name, Kind: history.Read, Call: w.rec.now()}
		rctx, cancel := context.WithTimeout(ctx, callTimeout)
		g, err := w.cli.Get(rctx, name+"/", clientv3.WithFirstCreate()...)
		cancel()
		if err == nil {
			if len(g.Kvs) > 0 {
				kv := g.Kvs[0]
				op.Holder, op.Token = sessionName(kv.Lease), uint64(kv.CreateRevision) //nolint:gosec // G115: a revision
				if withValue {
					op.Value = string(kv.Value)
				}
			}
			w.rec.complete(op, history.OK, nil)
		}
		w.pause(ctx, 50*time.Millisecond)
	}
}

// campaignLoop campaigns in the workload's election, proclaims a value or
// two while it leads, and resigns.
func (w *worker) campaignLoop(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		if !w.ensureLease(ctx) {
			w.pause(ctx, 200*time.Millisecond)
			continue
		}
		l := w.lease
		l.use(w.cfg.election)
		session := sessionName(int64(l.id))
		e := concurrency.NewElection(l.session, w.cfg.election)
		value := fmt.Sprintf("c%d-%d", w.id, n)
		op := history.Op{Client: w.id, Lock: w.cfg.election, Kind: history.Acquire, Session: session, Value: value, Wait: 3 * time.Second, Call: w.rec.now()}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := e.Campaign(cctx, value)
		cancel()
		if err != nil {
			w.acquireFailed(op, err)
			continue
		}
		op.Token = uint64(e.Rev()) //nolint:gosec // G115: a revision
		w.rec.complete(op, history.OK, nil)
		ok := true
		for i := range 1 + w.rng.IntN(2) {
			w.pause(ctx, 100*time.Millisecond)
			v := fmt.Sprintf("%s.%d", value, i+1)
			p := history.Op{Client: w.id, Lock: w.cfg.election, Kind: history.Proclaim, Session: session, Value: v, Call: w.rec.now()}
			pctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			err := e.Proclaim(pctx, v)
			cancel()
			switch {
			case err == nil:
				w.rec.complete(p, history.OK, nil)
			case errors.Is(err, concurrency.ErrElectionNotLeader):
				w.rec.complete(p, history.Fail, err) // the compare failed: nothing was written
			default:
				w.maybe(p, err)
			}
			if err != nil {
				ok = false
				break
			}
		}
		rel := history.Op{Client: w.id, Lock: w.cfg.election, Kind: history.Release, Session: session, Call: w.rec.now()}
		rctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err = e.Resign(rctx)
		cancel()
		if err != nil {
			w.maybe(rel, err)
		} else {
			w.rec.complete(rel, history.OK, nil)
		}
		if err != nil || !ok {
			w.endLease(errors.New("after a proclaim or resign that failed"))
		}
		w.pause(ctx, 100*time.Millisecond)
	}
}
