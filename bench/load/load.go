package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// Config says what to measure and where.
type Config struct {
	// Endpoints are the cluster's HTTP addresses (URLs or host:port).
	// Workers are spread over them round-robin.
	Endpoints []string
	// TLS configures HTTPS to Endpoints (nil: the system's roots, no
	// client certificate); with it, a host:port endpoint means https://.
	TLS *tls.Config
	// System, if set, is measured instead of the lockd cluster at
	// Endpoints.
	System System
	// Duration is how long each row measures, setup not counted.
	Duration time.Duration
	// Workers are the locks rows' worker counts.
	Workers []int
	// Waiters are the handoff rows' waiter counts.
	Waiters []int
	// Sessions are the keepalive rows' session counts.
	Sessions []int
	// Callers renew the keepalive rows' sessions (and create them).
	Callers int
	// TTL of the keepalive rows' sessions.
	TTL time.Duration
	// KeepaliveBatches are how many of its sessions a keepalive caller
	// renews in one request, a set of keepalive rows for each: 1 one
	// each, as the rows always did (empty: only that); above 1 the System
	// must be a BatchRenewer, and the rows are named keepalive-batch.
	KeepaliveBatches []int
	// Queue are the waiters rows' queue depths.
	Queue []int
	// Watchers are the watchers rows' counts of blocking queries; a run
	// of them starts with a row of 0 (the baseline) unless they name 0.
	Watchers []int
	// Fanout are the kv-watch rows' counts of watchers of one key.
	Fanout []int
	// HotKeys is how many keys the kv-cas rows' workers share.
	HotKeys int
	// ValueSize is the size of the kv rows' values, in bytes.
	ValueSize int
	// Keys is how many keys the kv-scale run writes first; Batch how
	// many puts each of its transactions carries (1: plain puts);
	// Writers how many write at once, in the load and in the paced puts
	// of the snapshot rows, which send PutRate puts a second in all for
	// SnapshotWindow (0: no snapshot rows). Stale makes its watches
	// ?stale, answered by the node asked rather than by the leader. Its
	// kv-wake rows hold the counts of Watchers.
	Keys           int
	Batch          int
	Writers        int
	PutRate        float64
	SnapshotWindow time.Duration
	Stale          bool
	// WatchRate is how many of the kv-scale run's watches are sent a
	// second while they are set up.
	WatchRate float64
	// SetupTimeout bounds the setup of a waiters or watchers row
	// (creating its sessions, queueing its waiters, parking its
	// queries); a row whose setup runs out of time is measured as far
	// as it got.
	SetupTimeout time.Duration
	// Progress, if set, receives a line about every two seconds while a
	// row runs, and one when it ends.
	Progress func(line string)
	// Run names this run in the names it creates; empty means random.
	Run string
}

// DefaultConfig returns the rows the issue of record asks for, each
// measured for 10 s.
func DefaultConfig() Config {
	return Config{
		Duration:       10 * time.Second,
		Workers:        []int{1, 16, 64, 256},
		Waiters:        []int{2, 16, 64},
		Sessions:       []int{1000, 10000, 100000},
		Callers:        64,
		TTL:            30 * time.Second,
		Queue:          []int{10000},
		Watchers:       []int{10000},
		Fanout:         []int{1000},
		HotKeys:        4,
		ValueSize:      1024,
		SetupTimeout:   2 * time.Minute,
		Keys:           100_000,
		Batch:          128,
		Writers:        8,
		PutRate:        200,
		SnapshotWindow: 2 * time.Minute,
		WatchRate:      500,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case len(c.Endpoints) == 0 && c.System == nil:
		return errors.New("no endpoints")
	case c.Duration < 100*time.Millisecond || c.Duration > time.Hour:
		return fmt.Errorf("duration %v out of range 100ms..1h", c.Duration)
	case c.Callers < 1 || c.Callers > 4096:
		return fmt.Errorf("callers %d out of range 1..4096", c.Callers)
	case c.TTL < 3*time.Second || c.TTL > time.Hour:
		return fmt.Errorf("ttl %v out of range 3s..1h", c.TTL)
	case c.HotKeys < 1 || c.HotKeys > 1024:
		return fmt.Errorf("hot keys %d out of range 1..1024", c.HotKeys)
	case c.ValueSize < 0 || c.ValueSize > api.MaxKVValueLen:
		return fmt.Errorf("value size %d out of range 0..%d", c.ValueSize, api.MaxKVValueLen)
	case c.SetupTimeout < time.Second || c.SetupTimeout > time.Hour:
		return fmt.Errorf("setup timeout %v out of range 1s..1h", c.SetupTimeout)
	case c.Keys < 1 || c.Keys > 10_000_000:
		return fmt.Errorf("keys %d out of range 1..10000000", c.Keys)
	case c.Batch < 1 || c.Batch > api.MaxTxnOps:
		return fmt.Errorf("batch %d out of range 1..%d", c.Batch, api.MaxTxnOps)
	case c.Writers < 1 || c.Writers > 4096:
		return fmt.Errorf("writers %d out of range 1..4096", c.Writers)
	case c.PutRate <= 0 || c.PutRate > 1e6:
		return fmt.Errorf("put rate %g out of range (0, 1000000]", c.PutRate)
	case c.WatchRate <= 0 || c.WatchRate > 1e6:
		return fmt.Errorf("watch rate %g out of range (0, 1000000]", c.WatchRate)
	case c.SnapshotWindow < 0 || c.SnapshotWindow > time.Hour:
		return fmt.Errorf("snapshot window %v out of range 0..1h", c.SnapshotWindow)
	}
	for _, list := range []struct {
		name     string
		ns       []int
		min, max int
	}{{"workers", c.Workers, 1, 4096}, {"waiters", c.Waiters, 1, 4096}, {"sessions", c.Sessions, 1, 1_000_000},
		{"queue", c.Queue, 1, maxScale}, {"watchers", c.Watchers, 0, maxScale},
		{"fanout", c.Fanout, 1, maxScale}} {
		for _, n := range list.ns {
			if n < list.min || n > list.max {
				return fmt.Errorf("%s: %d out of range %d..%d", list.name, n, list.min, list.max)
			}
		}
	}
	return nil
}

// Row is one measured row.
type Row struct {
	// locks, handoff, keepalive, waiters, watchers, kv-put, kv-get,
	// kv-cas, kv-txn or kv-watch
	Bench string `json:"bench"`
	// N is the row's workers, waiters, sessions, queue depth, blocking
	// queries or (kv-watch) watchers.
	N int `json:"n"`
	// Ops are the cycles (locks, watchers), grants (handoff, waiters) or
	// renewals completed in the measured time, Rate the same per second.
	Ops     int     `json:"ops"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"per_second"`
	// Latency is a cycle's (locks, watchers), a release-to-grant's
	// (handoff, waiters), a renewal's (keepalive), a request's (kv-put,
	// kv-get, kv-txn), an increment's from its first read to its
	// successful put (kv-cas), or from a put's answer until its last
	// watcher had it (kv-watch).
	Latency Latency `json:"latency"`
	// Errors are failed requests; FirstError is the first one's text.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Setup is the time taken to create the row's sessions; waiters rows:
	// to queue the N waiters, watchers rows: to send the N blocking
	// queries.
	Setup float64 `json:"setup_seconds"`
	// Keepalive rows only: sessions the cluster expired after they went a
	// TTL without a successful renewal (the renewers fell behind), and
	// sessions it expired sooner (a bug); Raft entries committed while
	// only keepalives ran.
	Lapsed        int64   `json:"lapsed,omitempty"`
	WrongExpiries int64   `json:"wrong_expiries,omitempty"`
	RaftEntries   *uint64 `json:"raft_entries,omitempty"`
	// LeaseFailures (keepalive rows of a system that counts them) is how
	// many master-lease renewals failed on the cluster's nodes from
	// before the sessions were created to the end: 0 means the lease was
	// never at risk, let alone suspended.
	LeaseFailures *uint64 `json:"lease_failures,omitempty"`
	// Waiters and watchers rows only: the sessions queued when the
	// measured time began (waiters: N, unless the setup ran out of time),
	// or the blocking queries still waiting when it ended (watchers: N,
	// less those refused, failed or answered).
	Parked int64 `json:"parked,omitempty"`
	// Watchers rows: blocking queries the cluster refused (429
	// too_many_requests, beyond its --max-blocking-queries); not errors.
	Refused int64 `json:"refused,omitempty"`
	// Waiters rows: the time from the end of the measured time until the
	// row's sessions were destroyed and every queued acquire had
	// returned.
	Drain float64 `json:"drain_seconds,omitempty"`
	// kv-cas rows: the hot keys the workers share, and the puts refused
	// cas_failed because another worker's increment came first (not
	// errors: the worker reads again and retries).
	Keys      int   `json:"keys,omitempty"`
	CASFailed int64 `json:"cas_failed,omitempty"`
	// kv-load rows: the puts to a transaction, each node's memory before
	// and after, and the median over the nodes of the heap per key;
	// keepalive-batch rows: the sessions one request renews at most, and
	// the requests that renewed Ops of them in the measured time.
	Batch       int          `json:"batch,omitempty"`
	Requests    int          `json:"requests,omitempty"`
	Memory      []NodeMemory `json:"memory,omitempty"`
	BytesPerKey float64      `json:"bytes_per_key,omitempty"`
	// kv-wake rows: unrelated watches answered before their wait ran out
	// (must be 0: nothing changes what they watch).
	Woken int64 `json:"woken,omitempty"`
	// The first kv-put-snap row: the snapshots seen during the puts.
	Snapshots []Snapshot `json:"snapshots,omitempty"`
}

// Unit names what a row's Ops count.
func (r Row) Unit() string {
	switch r.Bench {
	case "locks", "watchers":
		return "cycles"
	case "handoff", "waiters":
		return "grants"
	case "kv-put", "kv-watch", "kv-wake", "kv-put-nosnap", "kv-put-snap-leader", "kv-put-snap-follower":
		return "puts"
	case "kv-load":
		return "keys"
	case "kv-get":
		return "reads"
	case "kv-cas":
		return "increments"
	case "kv-txn":
		return "txns"
	}
	return "renewals"
}

// errorCount counts failed requests and keeps the first one's text.
type errorCount struct {
	n     atomic.Int64
	once  sync.Once
	first string
}

func (e *errorCount) add(err error) {
	e.n.Add(1)
	e.once.Do(func() { e.first = err.Error() })
}

func (e *errorCount) fill(r *Row) { r.Errors, r.FirstError = e.n.Load(), e.first }

// bench is one run of rows against one cluster.
type bench struct {
	cfg   Config
	sys   System
	run   string
	batch int // the keepalive rows': sessions renewed by one request
}

func newBench(cfg Config) *bench {
	run := cfg.Run
	if run == "" {
		run = fmt.Sprintf("%08x", rand.Uint32())
	}
	conns := max(cfg.Callers, 64)
	for _, ns := range [][]int{cfg.Workers, cfg.Waiters, cfg.Queue, cfg.Watchers, cfg.Fanout, {cfg.Writers}} {
		for _, n := range ns {
			conns = max(conns, n+1)
		}
	}
	sys := cfg.System
	if sys == nil {
		sys = newLockd(cfg.Endpoints, conns, cfg.TLS)
	}
	return &bench{cfg: cfg, sys: sys, run: run}
}

func (b *bench) progress(format string, args ...any) {
	if b.cfg.Progress != nil {
		b.cfg.Progress(fmt.Sprintf(format, args...))
	}
}

// ticker calls line about every two seconds until stop is called.
func (b *bench) ticker(line func() string) (stop func()) { return Ticker(b.cfg.Progress, line) }

// Ticker calls progress with line() about every two seconds until stop is
// called (nothing if progress is nil): the progress lines of a row.
func Ticker(progress func(string), line func() string) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress(line())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// sessions creates n sessions with ttl, spread over the endpoints, with up
// to par requests at once; session i is created through endpoint i (see
// newSession; its failed tries count in errs).
func (b *bench) sessions(ctx context.Context, n, par int, ttl time.Duration, errs *errorCount) ([]Session, error) {
	ss := make([]Session, n)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				s, err := b.newSession(ctx, i, ttl, errs)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				ss[i] = s
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.destroy(ss, par)
		return nil, fmt.Errorf("creating %d sessions: %w", n, firstErr)
	}
	return ss, ctx.Err()
}

// createTries is how many times a row sends a session's create when the
// answer says that nothing was done or that the outcome is unknown (lockd:
// no_leader, timeout), as while a leader is elected: one election should
// not end a row that creates 100,000 sessions. A create whose outcome was
// unknown may leave a session that nobody renews, which expires after its
// TTL.
const createTries = 5

// newSession creates session i, trying again after an answer that a
// later try may not get (createTries); each failed try counts in errs.
func (b *bench) newSession(ctx context.Context, i int, ttl time.Duration, errs *errorCount) (Session, error) {
	for try := 1; ; try++ {
		s, err := b.sys.NewSession(ctx, i, ttl)
		if err == nil || try == createTries || ctx.Err() != nil ||
			!errors.Is(err, errNoLeader) && !errors.Is(err, errTimeout) {
			return s, err
		}
		errs.add(err)
		backoff(ctx, try+2) // 160 ms, then doubled
	}
}

// destroy destroys the sessions, best effort, with up to par requests at
// once and a bound on the whole.
func (b *bench) destroy(ss []Session, par int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(par, len(ss)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ss) || ctx.Err() != nil {
					return
				}
				if ss[i] != nil {
					_ = ss[i].Destroy(ctx)
				}
			}
		}()
	}
	wg.Wait()
}

// rows measures one row for each n, in order, and stops at the first
// error.
func (b *bench) rows(ctx context.Context, ns []int, row func(*bench, context.Context, int) (Row, error)) ([]Row, error) {
	var rows []Row
	for _, n := range ns {
		r, err := row(b, ctx, n)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// finish fills in what every row reports from its samples and errors.
func (b *bench) finish(row *Row, lat []samples, errs *errorCount) {
	row.Latency, row.Ops = summarise(lat)
	row.Seconds = b.cfg.Duration.Seconds()
	row.Rate = float64(row.Ops) / row.Seconds
	errs.fill(row)
}

// pause backs off after an error, so that a failing cluster is not
// hammered.
func pause(ctx context.Context) { backoff(ctx, 0) }

// backoff is pause after the fails-th error in a row (from 0): 20 ms,
// doubled with each error up to 1 s, for the rows whose thousands of
// waiting callers would otherwise all come back every 20 ms.
func backoff(ctx context.Context, fails int) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond << min(fails, 6)):
	}
}

// Locks measures uncontended acquire+release cycles.
func Locks(ctx context.Context, cfg Config) ([]Row, error) {
	return newBench(cfg).rows(ctx, cfg.Workers, (*bench).locks)
}

func (b *bench) locks(ctx context.Context, workers int) (Row, error) {
	row := Row{Bench: "locks", N: workers}
	t0 := time.Now()
	var errs errorCount
	// The sessions outlive the row, so no keepalive runs beside it.
	ss, err := b.sessions(ctx, workers, 64, b.cfg.Duration+time.Minute, &errs)
	if err != nil {
		return row, err
	}
	defer b.destroy(ss, 64)
	row.Setup = time.Since(t0).Seconds()
	label := fmt.Sprintf("locks, %d workers", workers)
	err = b.cycles(ctx, &row, ss, func(i int) string { return fmt.Sprintf("bench/locks/%s/%d/%d", b.run, workers, i) }, label, &errs)
	b.progress("%s: %.0f cycles/s, p50 %s, p99 %s, %d errors", label, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), row.Errors)
	return row, err
}

// cycles is the measured time of the locks and watchers rows: session i
// of ss takes and releases the lock name(i) (acquire with wait 0, then
// release), again and again, for the row's duration. It fills in row
// from the cycles that ended in that time, with errs as the row's
// errors.
func (b *bench) cycles(ctx context.Context, row *Row, ss []Session, name func(i int) string, label string, errs *errorCount) error {
	var done atomic.Int64
	lat := make([]samples, len(ss))
	start := time.Now()
	end := start.Add(b.cfg.Duration)
	stop := b.ticker(func() string {
		return fmt.Sprintf("%s: %.0fs of %v, %d cycles", label, time.Since(start).Seconds(), b.cfg.Duration, done.Load())
	})
	rctx, cancel := context.WithDeadline(ctx, end.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := name(i)
			for rctx.Err() == nil {
				c0 := time.Now()
				if !c0.Before(end) {
					return
				}
				err := s.TryAcquire(rctx, name)
				if err == nil {
					err = s.Release(rctx, name)
				}
				if err != nil {
					errs.add(err)
					pause(rctx)
					continue
				}
				if c1 := time.Now(); c1.Before(end) {
					lat[i] = append(lat[i], c1.Sub(c0))
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop()
	b.finish(row, lat, errs)
	return ctx.Err()
}

// Handoff measures hand-offs of one contended lock.
func Handoff(ctx context.Context, cfg Config) ([]Row, error) {
	return newBench(cfg).rows(ctx, cfg.Waiters, (*bench).handoff)
}

func (b *bench) handoff(ctx context.Context, waiters int) (Row, error) {
	row := Row{Bench: "handoff", N: waiters}
	t0 := time.Now()
	q := newQueue(fmt.Sprintf("bench/handoff/%s/%d", b.run, waiters), 30*time.Second, waiters)
	ss, err := b.sessions(ctx, waiters, 64, b.cfg.Duration+time.Minute, &q.errs)
	if err != nil {
		return row, err
	}
	// Destroying the sessions also ends the places of waiters still
	// queued when the row ends.
	defer b.destroy(ss, 64)
	row.Setup = time.Since(t0).Seconds()
	start := q.measure(b.cfg.Duration) // the first grant needs no release
	stop := b.ticker(func() string {
		return fmt.Sprintf("handoff, %d waiters: %.0fs of %v, %d grants", waiters, time.Duration(q.now()-start).Seconds(), b.cfg.Duration, q.grants.Load())
	})
	rctx, cancel := context.WithDeadline(ctx, time.Now().Add(b.cfg.Duration+time.Minute))
	defer cancel()
	q.run(rctx, ss)
	q.wg.Wait()
	stop()
	b.finish(&row, q.lat, &q.errs)
	b.progress("handoff, %d waiters: %.0f grants/s, release-to-grant p50 %s, p99 %s, %d errors", waiters, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), row.Errors)
	return row, ctx.Err()
}

// queue is the loop of the handoff and waiters rows: sessions queue for
// one lock with blocking acquires; each, once granted, releases at once
// and queues again at the tail, until the measured time ends. A grant in
// the measured time counts with its release-to-grant latency: from the
// send of the release before it (whoever sent it) to the moment the
// acquire returns with the grant.
type queue struct {
	name string
	wait time.Duration // of each blocking acquire
	t0   time.Time     // times below are in ns after t0
	// start and end bound the measured time; start is MaxInt64 and end 0
	// until they are known.
	start, end atomic.Int64
	// released is when the last release was sent; -1 before the first.
	released atomic.Int64
	grants   atomic.Int64
	// timeouts are blocking acquires whose wait ran out in the measured
	// time.
	timeouts atomic.Int64
	lat      []samples
	errs     errorCount
	wg       sync.WaitGroup
}

func newQueue(name string, wait time.Duration, sessions int) *queue {
	q := &queue{name: name, wait: wait, t0: time.Now(), lat: make([]samples, sessions)}
	q.start.Store(math.MaxInt64)
	q.released.Store(-1)
	return q
}

func (q *queue) now() int64 { return int64(time.Since(q.t0)) }

// measure starts the measured time now, for d.
func (q *queue) measure(d time.Duration) int64 {
	now := q.now()
	q.start.Store(now)
	q.end.Store(now + int64(d))
	return now
}

// ended says whether the measured time is over at t.
func (q *queue) ended(t int64) bool { e := q.end.Load(); return e != 0 && t >= e }

// run starts every session of ss queueing.
func (q *queue) run(ctx context.Context, ss []Session) {
	for i, s := range ss {
		q.join(ctx, i, s)
	}
}

// join starts session s, the i-th of the row's, queueing; q.wg waits for
// it. It stops once the measured time is over, or ctx ends; errors after
// the end (a row that destroys its sessions ends their waits) do not
// count.
func (q *queue) join(ctx context.Context, i int, s Session) {
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		fails := 0
		for ctx.Err() == nil && !q.ended(q.now()) {
			err := s.Acquire(ctx, q.name, q.wait)
			got := q.now()
			if err != nil {
				switch {
				case ctx.Err() != nil || q.ended(got):
				case errors.Is(err, ErrLockHeld): // the wait ran out
					q.timeouts.Add(1)
				default:
					q.errs.add(err)
					backoff(ctx, fails)
					fails++
				}
				continue
			}
			fails = 0
			if rel := q.released.Load(); rel >= 0 && got >= q.start.Load() && !q.ended(got) {
				q.lat[i] = append(q.lat[i], time.Duration(got-rel))
				q.grants.Add(1)
			}
			q.released.Store(q.now())
			if err := s.Release(ctx, q.name); err != nil && ctx.Err() == nil && !q.ended(q.now()) {
				q.errs.add(err)
			}
		}
	}()
}

// Keepalive measures session renewals.
func Keepalive(ctx context.Context, cfg Config) ([]Row, error) {
	batches := cfg.KeepaliveBatches
	if len(batches) == 0 {
		batches = []int{1}
	}
	var all []Row
	for _, batch := range batches {
		b := newBench(cfg)
		b.batch = batch
		rows, err := b.rows(ctx, cfg.Sessions, (*bench).keepalive)
		all = append(all, rows...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

func (b *bench) keepalive(ctx context.Context, n int) (Row, error) {
	row := Row{Bench: "keepalive", N: n}
	step := max(b.batch, 1)
	batcher, _ := b.sys.(BatchRenewer)
	if step > 1 {
		if batcher == nil {
			return row, fmt.Errorf("keepalive: this system cannot renew several sessions in one request: %w", errors.ErrUnsupported)
		}
		row.Bench, row.Batch = "keepalive-batch", step
	}
	lc, countsLease := b.sys.(LeaseCounter)
	var leaseBefore uint64
	if countsLease {
		var err error
		if leaseBefore, err = lc.LeaseFailures(ctx); err != nil {
			countsLease = false
		}
	}
	callers := b.cfg.Callers
	ttl := b.cfg.TTL
	ss := make([]Session, n)
	// born[i] is when session i's create was sent, in ns after t0 (+1, so
	// that 0 means not created yet). The renewers start with the first
	// session, so that creating many does not take longer than a TTL.
	born := make([]atomic.Int64, n)
	var errs errorCount
	var done, lapsed, wrong atomic.Int64
	lat := make([]samples, callers)
	t0 := time.Now()
	// measuring is when the measured time starts, in ns after t0 (0: not
	// yet): once every session exists.
	var measuring atomic.Int64
	var end atomic.Int64 // ns after t0; 0: not yet known
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var renewers sync.WaitGroup
	for c := range callers {
		renewers.Add(1)
		go func() {
			defer renewers.Done()
			var mine []int // caller c renews sessions c, c+callers, ...
			for i := c; i < n; i += callers {
				mine = append(mine, i)
			}
			last := make([]time.Duration, len(mine)) // a successful renewal's send, after t0
			gone := make([]bool, len(mine))
			renewed := false // in this round over mine
			var ks []int     // the positions in mine one request renews
			var batch []Session
			for k := 0; len(mine) > 0 && rctx.Err() == nil; k += step {
				if k >= len(mine) {
					k = 0
				}
				if k == 0 {
					if !renewed {
						pause(rctx) // none of ours exists yet, or every one is gone
					}
					renewed = false
				}
				s0 := time.Since(t0)
				if e := end.Load(); e != 0 && int64(s0) >= e {
					return
				}
				ks, batch = ks[:0], batch[:0]
				for j := k; j < min(k+step, len(mine)); j++ {
					b0 := born[mine[j]].Load()
					if gone[j] || b0 == 0 {
						continue
					}
					if last[j] == 0 {
						last[j] = time.Duration(b0 - 1)
					}
					ks, batch = append(ks, j), append(batch, ss[mine[j]])
				}
				if len(ks) == 0 {
					continue
				}
				renewed = true
				var each []error
				if step == 1 {
					each = []error{batch[0].KeepAlive(rctx)}
				} else if e, err := batcher.KeepAliveMany(rctx, c, batch); err != nil {
					each = slices.Repeat([]error{err}, len(ks))
				} else {
					each = e
				}
				s1 := time.Since(t0)
				measured := false
				if m := measuring.Load(); m != 0 && int64(s0) >= m && (end.Load() == 0 || int64(s1) < end.Load()) {
					measured = true
				}
				var failed error // the first failure other than an expiry
				ok := false      // some session was renewed
				for x, j := range ks {
					switch err := each[x]; {
					case err == nil:
						last[j], ok = s0, true
						if measured {
							done.Add(1)
						}
					case errors.Is(err, ErrSessionExpired):
						// The expiry came before this answer; the cluster
						// promised none before the last acknowledged
						// renewal's send + TTL.
						gone[j] = true
						if s1-last[j] >= ttl {
							lapsed.Add(1)
						} else {
							wrong.Add(1)
							errs.add(fmt.Errorf("session %s expired less than %v after its last renewal was sent: %w", batch[x].ID(), s1-last[j], err))
						}
					case rctx.Err() == nil:
						failed = cmpErr(failed, err)
					}
				}
				if measured && ok {
					lat[c] = append(lat[c], s1-s0) // a request's latency, however many it renewed
				}
				if failed != nil {
					errs.add(failed)
					pause(rctx)
				}
			}
		}()
	}

	stopSetup := b.ticker(func() string {
		return fmt.Sprintf("keepalive, %d sessions: creating them, %.0fs so far, %d lapsed", n, time.Since(t0).Seconds(), lapsed.Load())
	})
	var next atomic.Int64
	var createErr error
	var mu sync.Mutex
	var creators sync.WaitGroup
	for range min(callers, n) {
		creators.Add(1)
		go func() {
			defer creators.Done()
			for rctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				sent := time.Since(t0)
				s, err := b.newSession(rctx, i, ttl, &errs)
				if err != nil {
					mu.Lock()
					createErr = cmpErr(createErr, err)
					mu.Unlock()
					cancel()
					return
				}
				ss[i] = s
				born[i].Store(int64(sent) + 1)
			}
		}()
	}
	creators.Wait()
	stopSetup()
	defer b.destroy(ss, callers)
	if createErr != nil {
		renewers.Wait()
		return row, fmt.Errorf("creating %d sessions: %w", n, createErr)
	}
	row.Setup = time.Since(t0).Seconds()
	b.progress("keepalive, %d sessions: created in %.1fs", n, row.Setup)
	before, err := b.sys.Writes(ctx)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		cancel()
		renewers.Wait()
		return row, err
	}
	counted := err == nil
	start := time.Since(t0)
	measuring.Store(int64(start))
	end.Store(int64(start + b.cfg.Duration))
	stop := b.ticker(func() string {
		return fmt.Sprintf("keepalive, %d sessions: %.0fs of %v, %d renewals, %d lapsed", n, (time.Since(t0) - start).Seconds(), b.cfg.Duration, done.Load(), lapsed.Load())
	})
	renewers.Wait()
	stop()
	after, err := b.sys.Writes(ctx)
	if counted && err == nil {
		entries := after - before
		row.RaftEntries = &entries
	}
	if countsLease {
		if leaseAfter, err := lc.LeaseFailures(ctx); err == nil {
			f := leaseAfter - min(leaseAfter, leaseBefore)
			row.LeaseFailures = &f
		}
	}
	b.finish(&row, lat, &errs)
	if step > 1 {
		// The latencies are requests'; a row counts sessions renewed.
		row.Requests = row.Ops
		row.Ops = int(done.Load())
		row.Rate = float64(row.Ops) / row.Seconds
	}
	row.Lapsed, row.WrongExpiries = lapsed.Load(), wrong.Load()
	b.progress("keepalive, %d sessions: %.0f renewals/s, p99 %s, %d lapsed, %d wrong expiries, %d errors, lease failures %s", n, row.Rate, ms(row.Latency.P99), row.Lapsed, row.WrongExpiries, row.Errors, countOrNA(row.LeaseFailures))
	return row, ctx.Err()
}

// countOrNA formats an optional count.
func countOrNA(c *uint64) string {
	if c == nil {
		return "n/a"
	}
	return fmt.Sprint(*c)
}
