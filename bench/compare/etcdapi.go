package compare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// The etcd-API rows: etcd's v3 API measured through etcd's own Go client
// (clientv3 and its concurrency package), by the very code of the etcd
// system (etcd.go, etcd_kv.go), against etcd and against lockd's nodes
// serving etcd's API (`lockd serve --etcd-listen`): the system
// LockdEtcd. Only the endpoints differ.
//
//   - mutex: W workers, each with its own lease, concurrency.Session and
//     concurrency.Mutex of a name of its own (uncontended), Lock then
//     Unlock, again and again (the locks row's loop, bench/load, with
//     Mutex.Lock where that row has Mutex.TryLock: uncontended, both are
//     the same one transaction).
//   - put: W workers each Put a value of ValueSize bytes to a key of
//     their own, again and again.
//   - range: W workers each Get (a Range of one key, linearizable: etcd's
//     default) a key of their own, written before the measured time.
//   - watch: N watchers of one key (bench/load's kv-watch row: one
//     writer puts, waits until every watcher has the change, puts again;
//     the time is from the put's answer to the last watcher's event).
//   - lease-keepalive: N leases granted (at most GrantRate a second, by
//     Callers at once, within GrantLimit), then renewed with
//     KeepAliveOnce round-robin by Callers callers (bench/load's
//     keepalive row: lapsed leases, wrong expiries and the writes while
//     only renewals ran are counted).
//
// The rows run in that order, lease-keepalive last: its leases are the
// most, and the ones that lapse are revoked by the cluster.

// LockdEtcd is lockd's cluster measured through etcd's v3 API.
const LockdEtcd = "lockd-etcd"

// EtcdAPIBench is the bench of the etcd-API rows (Options.Benches).
const EtcdAPIBench = "etcd-api"

// The etcd-API rows' benches (load.Row.Bench), in the order they run and
// the report shows them.
const (
	APIMutex = "mutex"
	APIPut   = "put"
	APIRange = "range"
	APIWatch = "watch"
	APILease = "lease-keepalive"
)

// APIRowBenches are the etcd-API rows' benches, in order.
var APIRowBenches = []string{APIMutex, APIPut, APIRange, APIWatch, APILease}

// APIOptions say which etcd-API rows to run; the rows' duration,
// Callers, TTL, Fanout (the watch rows' watchers) and ValueSize are
// Options.Load's.
type APIOptions struct {
	// MutexWorkers are the mutex rows' worker counts.
	MutexWorkers []int `json:"mutex_workers"`
	// KVWorkers are the put and range rows' worker counts.
	KVWorkers []int `json:"kv_workers"`
	// Leases are the lease-keepalive rows' lease counts.
	Leases []int `json:"leases"`
	// GrantRate bounds the lease-keepalive rows' grants, in grants a
	// second over all callers; GrantLimit bounds the time to grant one
	// row's leases (the row fails past it).
	GrantRate  float64       `json:"grant_rate"`
	GrantLimit time.Duration `json:"grant_limit_ns"`
	// Profiler, if set, fetches CPU profiles of the system's nodes during
	// each row.
	Profiler *Profiler `json:"-"`
	// Order is the order of the endpoints the rows used, set by Run:
	// the leader's first when it was known, so that the 1-worker rows
	// and the watch rows' writer talk to the leader on every system
	// (worker, watcher or lease i talks to endpoint i mod their count).
	Order []string `json:"endpoint_order,omitempty"`
}

// DefaultAPIOptions are the rows the issue of record asks for.
func DefaultAPIOptions() APIOptions {
	return APIOptions{
		MutexWorkers: []int{1, 16, 64, 256},
		KVWorkers:    []int{16, 64},
		Leases:       []int{1000, 100_000},
		GrantRate:    2000,
		GrantLimit:   4 * time.Minute,
	}
}

// Validate checks the options.
func (o APIOptions) Validate() error {
	switch {
	case o.GrantRate <= 0 || o.GrantRate > 1e6:
		return fmt.Errorf("grant rate %g out of range (0, 1000000]", o.GrantRate)
	case o.GrantLimit < time.Second || o.GrantLimit > time.Hour:
		return fmt.Errorf("grant limit %v out of range 1s..1h", o.GrantLimit)
	}
	for _, list := range []struct {
		name string
		ns   []int
		max  int
	}{{"mutex workers", o.MutexWorkers, 4096}, {"kv workers", o.KVWorkers, 4096}, {"leases", o.Leases, 1_000_000}} {
		for _, n := range list.ns {
			if n < 1 || n > list.max {
				return fmt.Errorf("%s: %d out of range 1..%d", list.name, n, list.max)
			}
		}
	}
	return nil
}

// runAPI runs the etcd-API rows against e, in order, and stops at the
// first error. Each row's Bench is one of APIRowBenches.
func runAPI(ctx context.Context, e *etcd, cfg load.Config, o APIOptions) ([]load.Row, error) {
	var rows []load.Row
	// one runs a row and profiles it if asked: the profile starts when
	// the row's setup is done (ready), or when the row starts if it has
	// none that is long.
	one := func(bench string, n int, f func(ready func()) ([]load.Row, error)) error {
		ready, wait := o.Profiler.start(fmt.Sprintf("%s-%d", bench, n), cfg.Duration)
		got, err := f(ready)
		ready() // a row that failed before its setup ended
		wait()
		for i := range got {
			got[i].Bench = bench
		}
		rows = append(rows, got...)
		if err != nil {
			return fmt.Errorf("%s, %d: %w", bench, n, err)
		}
		return nil
	}
	for _, n := range o.MutexWorkers {
		err := one(APIMutex, n, func(ready func()) ([]load.Row, error) {
			c := cfg
			c.Workers, c.System = []int{n}, &mutexSystem{e: e, n: n, ready: ready}
			return load.Locks(ctx, c)
		})
		if err != nil {
			return rows, err
		}
	}
	run := fmt.Sprintf("%08x", rand.Uint32())
	for _, bench := range []string{APIPut, APIRange} {
		for _, n := range o.KVWorkers {
			err := one(bench, n, func(ready func()) ([]load.Row, error) {
				r, err := kvRow(ctx, e, cfg, bench, n, run, ready)
				return []load.Row{r}, err
			})
			if err != nil {
				return rows, err
			}
		}
	}
	for _, n := range cfg.Fanout {
		err := one(APIWatch, n, func(ready func()) ([]load.Row, error) {
			ready() // the watches' setup is short: the profile includes it
			c := cfg
			c.Workers, c.Fanout, c.System = nil, []int{n}, e
			return load.KVRows(ctx, c)
		})
		if err != nil {
			return rows, err
		}
	}
	for _, n := range o.Leases {
		err := one(APILease, n, func(ready func()) ([]load.Row, error) {
			c := cfg
			c.Sessions = []int{n}
			c.System = &grantSystem{e: e, n: n, ready: ready, pace: newPacer(o.GrantRate), limit: o.GrantLimit}
			return load.Keepalive(ctx, c)
		})
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// from returns e with its endpoints (and their clients) rotated to start
// with endpoint i, and watches of its own.
func (e *etcd) from(i int) *etcd {
	return &etcd{name: e.name, endpoints: slices.Concat(e.endpoints[i:], e.endpoints[:i]),
		clients: slices.Concat(e.clients[i:], e.clients[:i])}
}

// readyAfter calls ready once n calls of done have been made.
type readyAfter struct {
	n     int
	ready func()
	count atomic.Int64
}

func (r *readyAfter) done() {
	if r.count.Add(1) == int64(r.n) && r.ready != nil {
		r.ready()
	}
}

// mutexSystem is e for the mutex rows: its sessions' TryAcquire is
// concurrency.Mutex's Lock (uncontended: the same one transaction as
// TryLock, which the locks rows use), and ready is called once the row's
// n sessions exist.
type mutexSystem struct {
	e     *etcd
	n     int
	ready func()
	once  sync.Once
	made  *readyAfter
}

func (m *mutexSystem) NewSession(ctx context.Context, i int, ttl time.Duration) (load.Session, error) {
	m.once.Do(func() { m.made = &readyAfter{n: m.n, ready: m.ready} })
	s, err := m.e.NewSession(ctx, i, ttl)
	if err != nil {
		return nil, err
	}
	m.made.done()
	return mutexSession{s.(*etcdSession)}, nil
}

func (m *mutexSystem) Writes(ctx context.Context) (uint64, error) { return m.e.Writes(ctx) }

func (m *mutexSystem) Waiters(ctx context.Context, name string) (int, error) {
	return m.e.Waiters(ctx, name)
}

func (m *mutexSystem) Watch(ctx context.Context, i int, name string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	return m.e.Watch(ctx, i, name, index, wait, sent)
}

type mutexSession struct{ *etcdSession }

// TryAcquire is Mutex.Lock, bounded by ctx (the row's): the row's locks
// are uncontended, so it never waits.
func (s mutexSession) TryAcquire(ctx context.Context, name string) error {
	m, err := s.mutex(name)
	if err != nil {
		return err
	}
	return etcdErr(m.Lock(ctx))
}

// grantSystem is e for the lease-keepalive rows: a session is a lease,
// granted at most at the pacer's rate and only within limit of the
// row's first grant; ready is called once the row's n leases exist.
type grantSystem struct {
	e     *etcd
	n     int
	ready func()
	pace  *pacer
	limit time.Duration
	once  sync.Once
	t0    time.Time
	made  *readyAfter
}

func (g *grantSystem) NewSession(ctx context.Context, i int, ttl time.Duration) (load.Session, error) {
	g.once.Do(func() { g.t0, g.made = time.Now(), &readyAfter{n: g.n, ready: g.ready} })
	deadline := g.t0.Add(g.limit)
	if err := g.pace.wait(ctx, deadline); err != nil {
		return nil, fmt.Errorf("granting %d leases: %w", g.n, err)
	}
	gctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	s, err := g.e.NewSession(gctx, i, ttl)
	if err != nil {
		if ctx.Err() == nil && gctx.Err() != nil {
			err = fmt.Errorf("granting %d leases took more than %v: %w", g.n, g.limit, err)
		}
		return nil, err
	}
	g.made.done()
	return s, nil
}

func (g *grantSystem) Writes(ctx context.Context) (uint64, error) { return g.e.Writes(ctx) }

func (g *grantSystem) Waiters(ctx context.Context, name string) (int, error) {
	return g.e.Waiters(ctx, name)
}

func (g *grantSystem) Watch(ctx context.Context, i int, name string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	return g.e.Watch(ctx, i, name, index, wait, sent)
}

// errGrantLimit is a grant the pacer would send after the row's limit.
var errGrantLimit = errors.New("the time allowed to grant the leases ran out")

// pacer spaces calls at least 1/rate apart, over all its callers.
type pacer struct {
	every time.Duration
	mu    sync.Mutex
	next  time.Time
}

func newPacer(rate float64) *pacer {
	return &pacer{every: time.Duration(float64(time.Second) / rate)}
}

// slot reserves the next call's time: now, or 1/rate after the last
// reserved, whichever is later.
func (p *pacer) slot(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	return at
}

// wait waits for the next slot; errGrantLimit if it comes after
// deadline.
func (p *pacer) wait(ctx context.Context, deadline time.Time) error {
	at := p.slot(time.Now())
	if at.After(deadline) {
		return errGrantLimit
	}
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kvRow is a put or range row: each of workers puts (or gets) a key of
// its own, through endpoint w mod the endpoints, again and again for the
// row's duration, through kv (etcd_kv.go's Put and Get). ready is called
// when the measured time starts.
func kvRow(ctx context.Context, kv load.KV, cfg load.Config, bench string, workers int, run string, ready func()) (load.Row, error) {
	row := load.Row{Bench: bench, N: workers}
	label := fmt.Sprintf("%s, %d workers", bench, workers)
	val := make([]byte, cfg.ValueSize)
	for i := range val {
		val[i] = 'x'
	}
	key := func(w int) string { return fmt.Sprintf("bench/etcd-api/%s/%s/%d/%d", run, bench, workers, w) }
	t0 := time.Now()
	if bench == APIRange {
		for w := range workers {
			if _, err := kv.Put(ctx, w, key(w), val, nil); err != nil {
				return row, fmt.Errorf("%s: setup: %w", label, err)
			}
		}
	}
	row.Setup = time.Since(t0).Seconds()
	op := func(ctx context.Context, w int) error {
		if bench == APIPut {
			_, err := kv.Put(ctx, w, key(w), val, nil)
			return err
		}
		v, _, err := kv.Get(ctx, w, key(w))
		if err == nil && len(v) != len(val) {
			err = fmt.Errorf("read %d bytes of %s, want %d", len(v), key(w), len(val))
		}
		return err
	}
	var errCount atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var done atomic.Int64
	lat := make([][]time.Duration, workers)
	if ready != nil {
		ready()
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	stop := load.Ticker(cfg.Progress, func() string {
		return fmt.Sprintf("%s: %.0fs of %v, %d ops", label, time.Since(start).Seconds(), cfg.Duration, done.Load())
	})
	rctx, cancel := context.WithDeadline(ctx, end.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				c0 := time.Now()
				if !c0.Before(end) {
					return
				}
				if err := op(rctx, w); err != nil {
					errCount.Add(1)
					errOnce.Do(func() { firstErr = err })
					select { // as bench/load: a failing cluster is not hammered
					case <-rctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
					continue
				}
				if c1 := time.Now(); c1.Before(end) {
					lat[w] = append(lat[w], c1.Sub(c0))
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop()
	row.Latency, row.Ops = summarise(lat)
	row.Seconds = cfg.Duration.Seconds()
	row.Rate = float64(row.Ops) / row.Seconds
	row.Errors = errCount.Load()
	if firstErr != nil {
		row.FirstError = firstErr.Error()
	}
	if cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf("%s: %.0f ops/s, p50 %.2fms, p99 %.2fms, %d errors", label, row.Rate,
			msOf(row.Latency.P50), msOf(row.Latency.P99), row.Errors))
	}
	return row, ctx.Err()
}

// summarise is bench/load's: the p50, p99 and max of every sample, and
// their count.
func summarise(all [][]time.Duration) (load.Latency, int) {
	merged := slices.Concat(all...)
	if len(merged) == 0 {
		return load.Latency{}, 0
	}
	slices.Sort(merged)
	at := func(q float64) time.Duration { return merged[int(q*float64(len(merged)-1))] }
	return load.Latency{P50: at(0.50), P99: at(0.99), Max: merged[len(merged)-1]}, len(merged)
}
