package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// maxScale bounds the waiters and watchers rows' N: each holds a
// connection (and an open file on both sides) for the whole row.
const maxScale = 100_000

// queueJoins bounds the waiters row's acquires sent and not yet queued
// while it sets up.
const queueJoins = 256

// Waiters measures hand-offs of one lock through a deep queue.
func Waiters(ctx context.Context, cfg Config) ([]Row, error) {
	return newBench(cfg).rows(ctx, cfg.Queue, (*bench).waiters)
}

// waiters queues n sessions behind a holder of one lock, then releases it
// and measures the hand-offs as the handoff row does (queue.run): each
// granted waiter releases at once and queues again at the tail, so the
// queue stays n-1 deep. When the measured time ends the sessions are
// destroyed, which ends the waits still queued; the time that takes is the
// row's drain.
func (b *bench) waiters(ctx context.Context, n int) (Row, error) {
	row := Row{Bench: "waiters", N: n}
	label := fmt.Sprintf("waiters, queue of %d", n)
	name := fmt.Sprintf("bench/waiters/%s/%d", b.run, n)
	// A system that cannot tell its queue cannot run the row; another
	// error here is the cluster's now, and the row counts those later.
	if _, err := b.sys.Waiters(ctx, name); errors.Is(err, errors.ErrUnsupported) {
		return row, fmt.Errorf("reading the queue of %s: %w", name, err)
	}
	if err := b.openFiles(n); err != nil {
		return row, err
	}
	// A blocking acquire waits as long as the API allows, so that a
	// waiter at the tail is granted before its wait runs out as long as
	// the queue moves n places in that time.
	wait := api.MaxWait
	sctx, cancelSetup := context.WithTimeout(ctx, b.cfg.SetupTimeout)
	defer cancelSetup()
	t0 := time.Now()
	q := newQueue(name, wait, n)
	// Session n holds the lock while sessions 0..n-1 queue for it. No
	// keepalive runs beside the row: the sessions' TTL outlasts it.
	ss, err := b.sessions(sctx, n+1, 64, b.cfg.SetupTimeout+b.cfg.Duration+wait+time.Minute, &q.errs)
	if err != nil {
		b.destroy(ss, 64)
		return row, fmt.Errorf("%s: setup: %w", label, err)
	}
	b.progress("%s: %d sessions created in %.1fs", label, n+1, time.Since(t0).Seconds())
	holder := ss[n]
	if err := holder.TryAcquire(sctx, name); err != nil {
		b.destroy(ss, 64)
		return row, fmt.Errorf("%s: the holder's acquire: %w", label, err)
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var depth atomic.Int64
	e0 := time.Now()
	stop := b.ticker(func() string {
		return fmt.Sprintf("%s: %d queued after %.0fs", label, depth.Load(), time.Since(e0).Seconds())
	})
	// The waiters join a few hundred at a time, as the queue grows: ten
	// thousand acquires sent at once would measure the burst (on two
	// cores, enough to cost the leader its followers' heartbeats), not
	// the queue.
	joined := 0
	for depth.Load() < int64(n) && sctx.Err() == nil {
		for ; joined < n && int64(joined)-depth.Load() < queueJoins; joined++ {
			q.join(rctx, joined, ss[joined])
		}
		select {
		case <-sctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		d, err := b.sys.Waiters(sctx, name)
		switch {
		case err == nil:
			depth.Store(int64(d))
		case sctx.Err() == nil:
			q.errs.add(err)
		}
	}
	stop()
	row.Setup, row.Parked = time.Since(e0).Seconds(), depth.Load()
	if ctx.Err() != nil {
		cancel()
		q.wg.Wait()
		b.destroy(ss, 64)
		return row, ctx.Err()
	}
	if row.Parked < int64(n) {
		// The sessions that have not joined stay out of the queue.
		b.progress("%s: the setup ran out of time (%v) with %d queued and %d joining: measuring the queue as it is", label, b.cfg.SetupTimeout, row.Parked, joined)
	} else {
		b.progress("%s: queued in %.1fs", label, row.Setup)
	}

	start := q.measure(b.cfg.Duration)
	q.released.Store(start)
	q.wg.Add(1)
	go func() { // the first hand-off, which may take a while
		defer q.wg.Done()
		if err := holder.Release(rctx, name); err != nil && rctx.Err() == nil && !q.ended(q.now()) {
			q.errs.add(err)
		}
	}()
	stop = b.ticker(func() string {
		return fmt.Sprintf("%s: %.0fs of %v, %d grants", label, time.Duration(q.now()-start).Seconds(), b.cfg.Duration, q.grants.Load())
	})
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(q.end.Load() - q.now())):
	}
	stop()
	b.progress("%s: destroying the sessions", label)
	d0 := time.Now()
	b.destroy(ss, 64)
	cancel() // a wait that the destroy did not end
	q.wg.Wait()
	row.Drain = time.Since(d0).Seconds()
	b.finish(&row, q.lat, &q.errs)
	if t := q.timeouts.Load(); t > 0 {
		row.Errors += t
		if row.FirstError == "" {
			row.FirstError = fmt.Sprintf("%d blocking acquires' waits of %v ran out", t, wait)
		}
	}
	b.progress("%s: %.0f grants/s, release-to-grant p50 %s, p99 %s, max %s, drained in %.1fs, %d errors",
		label, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), ms(row.Latency.Max), row.Drain, row.Errors)
	return row, ctx.Err()
}

// Watchers measures uncontended lock cycles while blocking queries wait on
// other locks. The rows start with one of 0 queries, the baseline, unless
// cfg.Watchers names 0 itself.
func Watchers(ctx context.Context, cfg Config) ([]Row, error) {
	ns := cfg.Watchers
	if len(ns) > 0 && !slices.Contains(ns, 0) {
		ns = append([]int{0}, ns...)
	}
	return newBench(cfg).rows(ctx, ns, (*bench).watchers)
}

// watchers parks n blocking queries, each on a lock of its own that
// nothing changes (query i through endpoint i, with the index a plain
// read of the lock returned just before), then measures one
// session's acquire+release cycles of yet another lock as the locks row
// does. A query whose wait ran out is sent again; one answered sooner
// with its lock's index unchanged is an error (nothing changes the lock);
// one that is refused is counted and not sent again.
func (b *bench) watchers(ctx context.Context, n int) (Row, error) {
	row := Row{Bench: "watchers", N: n}
	label := fmt.Sprintf("watchers, %d blocking queries", n)
	prefix := fmt.Sprintf("bench/watchers/%s/%d", b.run, n)
	if _, err := b.sys.Watch(ctx, 0, prefix+"/cycle", 0, 0, nil); errors.Is(err, errors.ErrUnsupported) {
		return row, fmt.Errorf("reading %s/cycle: %w", prefix, err)
	}
	if err := b.openFiles(n); err != nil {
		return row, err
	}
	sctx, cancelSetup := context.WithTimeout(ctx, b.cfg.SetupTimeout)
	defer cancelSetup()
	w := &queries{sys: b.sys, wait: api.MaxQueryWait, slots: make(chan struct{}, 64)}
	ss, err := b.sessions(sctx, 1, 1, b.cfg.SetupTimeout+b.cfg.Duration+time.Minute, &w.errs)
	if err != nil {
		b.destroy(ss, 1)
		return row, fmt.Errorf("%s: setup: %w", label, err)
	}
	defer b.destroy(ss, 1)

	wctx, stopWatchers := context.WithCancel(ctx)
	defer func() { stopWatchers(); w.wg.Wait() }()
	t0 := time.Now()
	for i := range n {
		w.wg.Add(1)
		go w.watch(wctx, i, fmt.Sprintf("%s/w%d", prefix, i))
	}
	if n > 0 {
		stop := b.ticker(func() string {
			return fmt.Sprintf("%s: %d sent, %d refused, after %.0fs", label, w.settled.Load()-w.refused.Load(), w.refused.Load(), time.Since(t0).Seconds())
		})
		for w.settled.Load() < int64(n) && sctx.Err() == nil {
			select {
			case <-sctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		stop()
		row.Setup = time.Since(t0).Seconds()
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		if w.settled.Load() < int64(n) {
			b.progress("%s: the setup ran out of time (%v) with %d sent: measuring as it is", label, b.cfg.SetupTimeout, w.settled.Load())
		}
		// The server reads the last queries a moment after they were
		// written.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		b.progress("%s: %d waiting, %d refused, %d failed, %d answered, sent in %.1fs", label, w.waiting.Load(), w.refused.Load(), w.errs.n.Load(), w.answered.Load(), row.Setup)
	}
	err = b.cycles(ctx, &row, ss, func(int) string { return prefix + "/cycle" }, label, &w.errs)
	row.Parked, row.Refused = w.waiting.Load(), w.refused.Load()
	b.progress("%s: %.0f cycles/s, p50 %s, p99 %s, %d waiting at the end, %d refused, %d errors",
		label, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), row.Parked, row.Refused, row.Errors)
	return row, err
}

// queries are the blocking queries of a watchers row.
type queries struct {
	sys  System
	wait time.Duration // of each query
	// slots bounds the queries on their way (sent, not yet written) at
	// once, so that n connections are not all dialled in the same
	// instant.
	slots chan struct{}
	// settled counts the queries sent, refused or failed once each;
	// waiting those sent and not yet answered; answered those that came
	// back with their lock changed.
	settled, waiting, refused, answered atomic.Int64
	errs                                errorCount
	wg                                  sync.WaitGroup
}

// watch keeps a blocking query on the lock name waiting, through
// endpoint i, until ctx ends or the query is refused.
func (w *queries) watch(ctx context.Context, i int, name string) {
	defer w.wg.Done()
	var settle sync.Once
	var index uint64
	read := false // index is the lock's, read before the first query
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return
		case w.slots <- struct{}{}:
		}
		var freed sync.Once
		free := func() { freed.Do(func() { <-w.slots }) }
		if !read {
			idx, err := w.sys.Watch(ctx, i, name, 0, 0, nil)
			if err == nil {
				index, read = idx, true
			} else if ctx.Err() == nil {
				free()
				w.errs.add(err)
				backoff(ctx, fails)
				fails++
				continue
			}
		}
		var state atomic.Int32 // 0: not sent yet, 1: sent, 2: returned
		sent := time.Now()
		idx, err := w.sys.Watch(ctx, i, name, index, w.wait, func() {
			if state.CompareAndSwap(0, 1) {
				w.waiting.Add(1)
			}
			free()
			settle.Do(func() { w.settled.Add(1) })
		})
		if state.Swap(2) == 1 {
			w.waiting.Add(-1)
		}
		free()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && idx <= index && time.Since(sent) < w.wait*99/100:
			// Nothing changes the lock: the query has no cause to answer
			// before its wait runs out.
			err = fmt.Errorf("a blocking query on %s was answered after %v, before its wait of %v ran out, with its index unchanged (%d)",
				name, time.Since(sent).Round(time.Millisecond), w.wait, idx)
		case err == nil:
			w.answered.Add(1)
			index, fails = idx, 0
			continue
		}
		settle.Do(func() { w.settled.Add(1) })
		if errors.Is(err, ErrTooMany) {
			w.refused.Add(1)
			return
		}
		w.errs.add(err)
		backoff(ctx, fails)
		fails++
	}
}

// openFiles makes sure that this process may hold n more connections
// open. Go raises the soft limit of open files to the hard limit when a
// program starts; if the limit is still short, it is raised here as far
// as the hard limit allows, and the row is refused if that is too little.
func (b *bench) openFiles(n int) error {
	if n == 0 {
		return nil
	}
	want := uint64(n) + 1024 //nolint:gosec // G115: n counts connections, never negative
	before, after, err := raiseOpenFiles(want)
	if err != nil {
		return fmt.Errorf("raising the limit of open files to %d: %w", want, err)
	}
	if after > before {
		b.progress("raised this process's limit of open files from %d to %d", before, after)
	}
	if after < want {
		return fmt.Errorf("%d connections want about %d open files, and this process may have %d (ulimit -n, at most ulimit -Hn): raise the limit or ask for fewer", n, want, after)
	}
	return nil
}
