package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// scaleKV is what the kv-scale rows need of a system beyond KV: watches
// of prefixes, and each node's metrics and heap.
type scaleKV interface {
	KV
	// watchKV waits through endpoint i for events of key (or, with
	// prefix, of the keys under it) after index, or for wait to run out;
	// it returns the index to pass next and how many events came. With
	// stale, the node asked answers from its own state.
	watchKV(ctx context.Context, i int, key string, prefix, stale bool, index uint64, wait time.Duration, sent func()) (uint64, int, error)
	// nodes is the number of endpoints; endpointOf names endpoint i.
	nodes() int
	endpointOf(i int) string
	// metrics reads the series without labels of endpoint i's /metrics.
	metrics(ctx context.Context, i int) (map[string]float64, error)
	// heapAfterGC asks endpoint i for its heap profile after a
	// collection and returns the live heap (HeapAlloc) it reports; ok is
	// false if the node does not serve profiles (lockd serve --pprof).
	heapAfterGC(ctx context.Context, i int) (heap uint64, ok bool, err error)
}

// NodeMemory is one node's memory at the points of a kv-scale run: the
// live heap after a collection (HeapAlloc of the heap profile with gc=1,
// when the node serves profiles; else the heap in use that /metrics
// shows, garbage included) and the resident set.
type NodeMemory struct {
	Endpoint string `json:"endpoint"`
	// AfterGC is true if the heaps were read after a collection.
	AfterGC bool `json:"after_gc"`
	// Before the keys were written.
	HeapBefore uint64 `json:"heap_before"`
	RSSBefore  uint64 `json:"rss_before"`
	// Right after the keys were written: Raft's cache of the last 1,024
	// log entries still holds the load's transactions.
	HeapLoaded uint64 `json:"heap_loaded"`
	RSSLoaded  uint64 `json:"rss_loaded"`
	// After logCacheTurnover more small puts, which push the load's
	// entries out of that cache: the keys and their events in the
	// history (all of them, if less than --kv-history-age old).
	HeapAfter uint64 `json:"heap_after"`
	RSSAfter  uint64 `json:"rss_after"`
	// While the watchers of the largest kv-wake row were held.
	HeapWatching uint64 `json:"heap_watching,omitempty"`
	RSSWatching  uint64 `json:"rss_watching,omitempty"`
	// Once the whole run is over (its watchers gone, its snapshots
	// taken).
	HeapEnd uint64 `json:"heap_end,omitempty"`
	RSSEnd  uint64 `json:"rss_end,omitempty"`
	// BytesPerKey is (HeapAfter-HeapBefore) / the keys written.
	BytesPerKey float64 `json:"bytes_per_key"`
}

// logCacheTurnover is how many small puts follow the load before the
// memory is read again: more than the 1,024 entries of Raft's log cache
// (lease/raft.go), so that the cache no longer holds the load's
// transactions.
const logCacheTurnover = 1100

// Snapshot is one or more snapshots a node's Raft wrote during a kv-snap
// row, seen between two reads of its metrics.
type Snapshot struct {
	Endpoint string `json:"endpoint"`
	// Leader is true if the node led when the snapshot was seen.
	Leader bool `json:"leader"`
	// Count is how many snapshots completed between the two reads (1
	// unless the reads missed some); Seconds is their mean time from the
	// freeze of the state to the close of the file (lockd_snapshot_*),
	// Bytes the size of the last.
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds"`
	Bytes   uint64  `json:"bytes"`
	// From and To bound the snapshot from outside: sent the last read
	// that saw none under way, received the first that saw it done, in
	// seconds from the start of the row.
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// KVScale measures the namespace at scale on one cluster, in one run:
//
//   - kv-load: cfg.Keys keys of cfg.ValueSize bytes are written, by
//     transactions of cfg.Batch puts (a plain put each if Batch is 1),
//     cfg.Writers at a time; the nodes' memory is read before, right
//     after, and after logCacheTurnover small puts (NodeMemory), and the
//     row gives the heap per key from the last; it is read again while
//     the watchers are held and at the end.
//   - kv-wake, for each count of cfg.Watchers (0 first unless named):
//     that many watches are held on other keys (nine in ten on a key of
//     the load, one in ten on a prefix of its own with nothing under it),
//     spread over the endpoints; meanwhile one key that one watcher
//     watches is put again and again, and the row's latency is from the
//     put's start until that watcher had the change. Unrelated watches
//     that answered before their wait ran out count in Woken (they must
//     not: nothing changes their keys).
//   - kv-put-nosnap, kv-put-snap-leader, kv-put-snap-follower, once the
//     watches have ended: for cfg.SnapshotWindow, cfg.Writers put keys of
//     the load (none that was watched) at cfg.PutRate puts a second in
//     all, while the nodes' snapshot metrics are read every 100 ms; each
//     put is counted in the row of what overlapped it: no snapshot, one
//     on the leader, one on followers only. The first of these rows
//     carries the snapshots seen.
func KVScale(ctx context.Context, cfg Config) ([]Row, error) {
	b := newBench(cfg)
	sys, ok := b.sys.(scaleKV)
	if !ok {
		return nil, fmt.Errorf("the kv-scale rows need lockd's HTTP API (watches of prefixes, /metrics): %w", errors.ErrUnsupported)
	}
	s := &kvScale{b: b, kv: sys, prefix: fmt.Sprintf("bench/kvscale/%s", b.run)}
	return s.run(ctx)
}

// kvScale is one kv-scale run.
type kvScale struct {
	b      *bench
	kv     scaleKV
	prefix string
	// index is the namespace's index after the load: the watches start
	// from it.
	index uint64
}

func (s *kvScale) key(i int) string { return fmt.Sprintf("%s/k/%07d", s.prefix, i) }

func (s *kvScale) run(ctx context.Context) ([]Row, error) {
	cfg := s.b.cfg
	var rows []Row
	load, err := s.load(ctx)
	rows = append(rows, load)
	if err != nil {
		return rows, err
	}

	ns := slices.Clone(cfg.Watchers)
	if !slices.Contains(ns, 0) {
		ns = append([]int{0}, ns...)
	}
	slices.Sort(ns)
	if err := s.b.openFiles(ns[len(ns)-1] + cfg.Writers + 8); err != nil {
		return rows, err
	}
	w := &unrelated{s: s, wait: api.MaxQueryWait}
	wctx, stopWatchers := context.WithCancel(ctx)
	defer func() { stopWatchers(); w.wg.Wait() }()
	for _, n := range ns {
		row, err := s.wake(ctx, wctx, w, n)
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
	}
	if ns[len(ns)-1] > 0 {
		s.reread(ctx, &rows[0], func(m *NodeMemory, heap, rss uint64) { m.HeapWatching, m.RSSWatching = heap, rss })
	}
	// The watches end before the snapshot rows, which measure the
	// snapshots alone.
	stopWatchers()
	w.wg.Wait()

	snaps, err := s.snapshots(ctx)
	rows = append(rows, snaps...)
	if err != nil {
		return rows, err
	}
	// The memory once the run is over: the watchers gone, the snapshots
	// taken.
	s.reread(ctx, &rows[0], func(m *NodeMemory, heap, rss uint64) { m.HeapEnd, m.RSSEnd = heap, rss })
	return rows, ctx.Err()
}

// reread reads every node's memory again into the load row, with set; a
// node that does not answer is left out (and said so).
func (s *kvScale) reread(ctx context.Context, load *Row, set func(m *NodeMemory, heap, rss uint64)) {
	for i := range load.Memory {
		heap, rss, _, err := s.memory(ctx, i)
		if err != nil {
			s.b.progress("kv-scale: reading the memory of %s: %v", load.Memory[i].Endpoint, err)
			continue
		}
		set(&load.Memory[i], heap, rss)
	}
}

// memory reads endpoint i's heap (after a collection if it serves
// profiles, else the heap in use of /metrics) and resident set, once no
// snapshot is under way on it (a snapshot holds the encoded state while
// it writes it; waited for up to a minute).
func (s *kvScale) memory(ctx context.Context, i int) (heap, rss uint64, afterGC bool, err error) {
	m, err := s.kv.metrics(ctx, i)
	for try := 0; err == nil && m["lockd_snapshot_in_progress"] > 0 && try < 600 && ctx.Err() == nil; try++ {
		pauseFor(ctx, 100*time.Millisecond)
		m, err = s.kv.metrics(ctx, i)
	}
	if err != nil {
		return 0, 0, false, err
	}
	rss = uint64(m["process_resident_memory_bytes"])
	heap, afterGC, err = s.kv.heapAfterGC(ctx, i)
	if err != nil {
		return 0, 0, false, err
	}
	if !afterGC {
		heap = uint64(m["go_memstats_heap_inuse_bytes"])
	}
	return heap, rss, afterGC, nil
}

// load writes the keys, Batch to a transaction, Writers transactions at a
// time (writer w through endpoint w), and reads the memory before and
// after.
func (s *kvScale) load(ctx context.Context) (Row, error) {
	cfg := s.b.cfg
	row := Row{Bench: "kv-load", N: cfg.Keys, Batch: cfg.Batch}
	label := fmt.Sprintf("kv-load, %d keys of %d bytes, %d to a transaction", cfg.Keys, cfg.ValueSize, cfg.Batch)
	for i := range s.kv.nodes() {
		heap, rss, afterGC, err := s.memory(ctx, i)
		if err != nil {
			return row, fmt.Errorf("%s: reading the memory before: %w", label, err)
		}
		row.Memory = append(row.Memory, NodeMemory{Endpoint: s.kv.endpointOf(i), AfterGC: afterGC, HeapBefore: heap, RSSBefore: rss})
	}
	val := s.b.value("")
	batches := (cfg.Keys + cfg.Batch - 1) / cfg.Batch
	var next, written atomic.Int64
	var top atomic.Uint64
	var errs errorCount
	lat := make([]samples, cfg.Writers)
	t0 := time.Now()
	stop := s.b.ticker(func() string {
		return fmt.Sprintf("%s: %d written after %.0fs", label, written.Load(), time.Since(t0).Seconds())
	})
	var wg sync.WaitGroup
	for w := range cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				bi := int(next.Add(1) - 1)
				if bi >= batches {
					return
				}
				lo, hi := bi*cfg.Batch, min((bi+1)*cfg.Batch, cfg.Keys)
				for fails := 0; ctx.Err() == nil; fails++ {
					c0 := time.Now()
					idx, err := s.write(ctx, w, lo, hi, val)
					if err == nil {
						lat[w] = append(lat[w], time.Since(c0))
						written.Add(int64(hi - lo))
						for {
							t := top.Load()
							if idx <= t || top.CompareAndSwap(t, idx) {
								break
							}
						}
						break
					}
					// A lost write is written again: the load must be
					// whole for the memory per key to mean anything.
					errs.add(err)
					if fails >= 10 {
						return
					}
					backoff(ctx, fails)
				}
			}
		}()
	}
	wg.Wait()
	stop()
	row.Setup = time.Since(t0).Seconds()
	row.Latency, _ = summarise(lat)
	row.Ops, row.Seconds = int(written.Load()), row.Setup
	row.Rate = float64(row.Ops) / max(row.Seconds, 1e-9)
	errs.fill(&row)
	s.index = top.Load()
	if err := ctx.Err(); err != nil {
		return row, err
	}
	if row.Ops < cfg.Keys {
		return row, fmt.Errorf("%s: %d of %d keys written (%s)", label, row.Ops, cfg.Keys, row.FirstError)
	}
	for i := range row.Memory {
		heap, rss, _, err := s.memory(ctx, i)
		if err != nil {
			return row, fmt.Errorf("%s: reading the memory after: %w", label, err)
		}
		row.Memory[i].HeapLoaded, row.Memory[i].RSSLoaded = heap, rss
	}
	if err := s.turnover(ctx); err != nil {
		return row, fmt.Errorf("%s: %w", label, err)
	}
	var per []float64
	for i := range row.Memory {
		heap, rss, _, err := s.memory(ctx, i)
		if err != nil {
			return row, fmt.Errorf("%s: reading the memory after: %w", label, err)
		}
		m := &row.Memory[i]
		m.HeapAfter, m.RSSAfter = heap, rss
		m.BytesPerKey = (float64(heap) - float64(m.HeapBefore)) / float64(max(cfg.Keys, 1))
		per = append(per, m.BytesPerKey)
	}
	slices.Sort(per)
	row.BytesPerKey = per[len(per)/2]
	s.b.progress("%s: %.0f keys/s, %.1fs, heap per key (median of the nodes) %.0f bytes, %d errors", label, row.Rate, row.Setup, row.BytesPerKey, row.Errors)
	return row, nil
}

// turnover sends logCacheTurnover puts of an empty value to one key of
// each writer's own, Writers at a time.
func (s *kvScale) turnover(ctx context.Context) error {
	var left atomic.Int64
	left.Store(logCacheTurnover)
	var errs errorCount
	var wg sync.WaitGroup
	for w := range s.b.cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s/turnover/%d", s.prefix, w)
			for fails := 0; left.Add(-1) >= 0 && ctx.Err() == nil; {
				if _, err := s.kv.Put(ctx, w, key, nil, nil); err != nil {
					errs.add(err)
					left.Add(1)
					if fails++; fails > 10 {
						return
					}
					backoff(ctx, fails)
				}
			}
		}()
	}
	wg.Wait()
	if left.Load() > 0 {
		return fmt.Errorf("the %d puts after the load: %d not made (%s)", logCacheTurnover, left.Load(), errs.first)
	}
	return ctx.Err()
}

// write puts keys lo..hi-1 through endpoint w: one put, or one
// transaction of puts.
func (s *kvScale) write(ctx context.Context, w, lo, hi int, val []byte) (uint64, error) {
	if hi-lo == 1 {
		return s.kv.Put(ctx, w, s.key(lo), val, nil)
	}
	puts := make([]KVPut, 0, hi-lo)
	for k := lo; k < hi; k++ {
		puts = append(puts, KVPut{Key: s.key(k), Value: val})
	}
	ok, idx, err := s.kv.Txn(ctx, w, nil, puts)
	if err == nil && !ok {
		err = fmt.Errorf("a transaction of %d puts without compares did not succeed", hi-lo)
	}
	return idx, err
}

// unrelated are the watches of the kv-wake rows on keys that nothing
// changes.
type unrelated struct {
	s    *kvScale
	wait time.Duration
	// started is how many watcher goroutines run; parked those whose
	// watch is on its way or waiting; settled those whose first watch
	// was sent, refused or failed; refused those the cluster refused
	// (429: they stop); woken the answers before the wait ran out.
	started                         int
	parked, settled, refused, woken atomic.Int64
	errs                            errorCount
	wg                              sync.WaitGroup
}

// target is watcher i's key or prefix: one in ten watches a prefix of
// its own under which there is nothing, the others a key of the load (or
// a key of their own if the load has fewer keys).
func (u *unrelated) target(i int) (string, bool) {
	if i%10 == 9 {
		return fmt.Sprintf("%s/p/%07d/", u.s.prefix, i), true
	}
	if i < u.s.b.cfg.Keys {
		return u.s.key(i), false
	}
	return fmt.Sprintf("%s/w/%07d", u.s.prefix, i), false
}

// grow starts watchers until n run, WatchRate a second, at most 64 being
// sent at once: ten thousand watches sent as fast as the cluster takes
// them starve a two-core machine's Raft heartbeats, and measure that
// rather than the watches held.
func (u *unrelated) grow(ctx context.Context, n int) {
	slots := make(chan struct{}, 64)
	from := u.started
	for ; u.started < n; u.started++ {
		i := u.started
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			pauseFor(ctx, time.Duration(float64(i-from)*float64(time.Second)/u.s.b.cfg.WatchRate))
			u.watch(ctx, i, slots)
		}()
	}
}

// watchBackoff is the pause of a watcher after its fails-th failure in a
// row (from 0): 100 ms doubled up to 6.4 s, each from half to 1.5 times
// that, so that thousands of watchers failing together (an election) do
// not all come back at once.
func watchBackoff(ctx context.Context, fails int) {
	d := 100 * time.Millisecond << min(fails, 6)
	pauseFor(ctx, d/2+rand.N(d))
}

// watch keeps watcher i's watch waiting until ctx ends or the cluster
// refuses it.
func (u *unrelated) watch(ctx context.Context, i int, slots chan struct{}) {
	key, prefix := u.target(i)
	index, fails := u.s.index, 0
	var settled sync.Once
	settle := func() { settled.Do(func() { u.settled.Add(1) }) }
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		var once sync.Once
		free := func() { once.Do(func() { <-slots }) }
		var state atomic.Int32 // 0: not sent, 1: sent, 2: returned
		t0 := time.Now()
		next, events, err := u.s.kv.watchKV(ctx, i, key, prefix, u.s.b.cfg.Stale, index, u.wait, func() {
			free()
			if state.CompareAndSwap(0, 1) {
				u.parked.Add(1)
			}
			settle()
		})
		free()
		if state.Swap(2) == 1 {
			u.parked.Add(-1)
		}
		settle()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrTooMany):
			u.refused.Add(1)
			return
		case err != nil:
			u.errs.add(err)
			watchBackoff(ctx, fails)
			fails++
			continue
		case events > 0 || time.Since(t0) < u.wait*99/100:
			u.woken.Add(1)
			u.errs.add(fmt.Errorf("a watch of %s was answered after %v with %d events, before its wait of %v ran out: nothing changes it",
				key, time.Since(t0).Round(time.Millisecond), events, u.wait))
		}
		index, fails = max(index, next), 0
	}
}

// wake holds n unrelated watches (starting those not yet running) and
// measures, for the row's duration, puts of one key that one watcher
// watches: from the put's start until the watcher has it.
func (s *kvScale) wake(ctx, wctx context.Context, u *unrelated, n int) (Row, error) {
	cfg := s.b.cfg
	row := Row{Bench: "kv-wake", N: n}
	label := fmt.Sprintf("kv-wake, %d unrelated watchers", n)
	var err error
	if n > 0 {
		t0 := time.Now()
		u.grow(wctx, n)
		stop := s.b.ticker(func() string {
			return fmt.Sprintf("%s: %d waiting, %d refused after %.0fs", label, u.parked.Load(), u.refused.Load(), time.Since(t0).Seconds())
		})
		for u.settled.Load() < int64(n) && time.Since(t0) < cfg.SetupTimeout && ctx.Err() == nil {
			pauseFor(ctx, 20*time.Millisecond)
		}
		stop()
		row.Setup = time.Since(t0).Seconds()
		pauseFor(ctx, time.Second) // the server reads the last watches a moment after they were written
		s.b.progress("%s: %d waiting, %d refused, %d failed, sent in %.1fs", label, u.parked.Load(), u.refused.Load(), u.errs.n.Load(), row.Setup)
	}
	woken0, errs0 := u.woken.Load(), u.errs.n.Load()

	key := fmt.Sprintf("%s/m/%d", s.prefix, n)
	val := s.b.value("")
	// The first put waits out an election (up to 30 s), counting each
	// failed try.
	var errs errorCount
	var index uint64
	for t1 := time.Now(); ; pauseFor(ctx, 250*time.Millisecond) {
		if index, err = s.kv.Put(ctx, 0, key, val, nil); err == nil {
			break
		}
		errs.add(err)
		if time.Since(t1) > 30*time.Second || ctx.Err() != nil {
			return row, fmt.Errorf("%s: the first put: %w", label, err)
		}
	}
	// The watcher of the key, through the second endpoint (the put goes
	// through the first): it sends each time it had the change at.
	got := make(chan time.Time, 1)
	mctx, stopWatcher := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		for fails := 0; mctx.Err() == nil; {
			next, events, err := s.kv.watchKV(mctx, 1, key, false, cfg.Stale, index, time.Minute, nil)
			at := time.Now()
			switch {
			case mctx.Err() != nil:
				return
			case err != nil:
				errs.add(err)
				backoff(mctx, fails)
				fails++
				continue
			}
			fails = 0
			if events > 0 {
				index = next
				select {
				case got <- at:
				case <-mctx.Done():
					return
				}
			}
		}
	}()
	defer func() { stopWatcher(); mwg.Wait() }()

	var lat samples
	var seen atomic.Int64
	end := time.Now().Add(cfg.Duration)
	stop := s.b.ticker(func() string { return fmt.Sprintf("%s: %d puts seen", label, seen.Load()) })
	for time.Now().Before(end) && ctx.Err() == nil {
		pauseFor(ctx, 20*time.Millisecond) // the watcher's next watch reaches the server
		select {                           // a put that failed may have been applied all the same
		case <-got:
		default:
		}
		c0 := time.Now()
		if _, err := s.kv.Put(ctx, 0, key, val, nil); err != nil {
			errs.add(err)
			pause(ctx)
			continue
		}
		select {
		case at := <-got:
			lat = append(lat, at.Sub(c0))
			seen.Add(1)
		case <-time.After(30 * time.Second):
			stop()
			errs.fill(&row)
			return row, fmt.Errorf("%s: the watcher had not seen a put 30s after it was sent", label)
		case <-ctx.Done():
		}
	}
	stop()
	s.b.finish(&row, []samples{lat}, &errs)
	row.Parked, row.Refused = u.parked.Load(), u.refused.Load()
	row.Woken = u.woken.Load() - woken0
	if e := u.errs.n.Load() - errs0; e > 0 {
		row.Errors += e
		if row.FirstError == "" {
			row.FirstError = u.errs.first
		}
	}
	s.b.progress("%s: put to wake-up p50 %s, p99 %s, max %s; %d waiting, %d woken, %d errors",
		label, ms(row.Latency.P50), ms(row.Latency.P99), ms(row.Latency.Max), row.Parked, row.Woken, row.Errors)
	return row, ctx.Err()
}

// pauseFor waits d or until ctx ends.
func pauseFor(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// span is a put's time, from its start to its answer, in ns from t0.
type span struct{ from, to int64 }

// snapSpan is a snapshot seen from outside, in ns from t0.
type snapSpan struct {
	span
	node   int
	leader bool
}

// snapshots runs the paced puts for SnapshotWindow while it reads the
// nodes' snapshot metrics, and sorts the puts by what overlapped them.
func (s *kvScale) snapshots(ctx context.Context) ([]Row, error) {
	cfg := s.b.cfg
	label := fmt.Sprintf("kv-put during snapshots, %d writers, %.0f puts/s", cfg.Writers, cfg.PutRate)
	if cfg.SnapshotWindow <= 0 {
		return nil, nil
	}
	t0 := time.Now()
	now := func() int64 { return int64(time.Since(t0)) }

	// The poller: every 100 ms, each node's snapshot metrics. A
	// snapshot's span runs from the sending of the last read that saw
	// none under way to the receipt of the first that saw it done, so it
	// holds the snapshot whole.
	var spans []snapSpan
	var seen []Snapshot
	var nseen atomic.Int64
	var perr errorCount
	pctx, stopPoller := context.WithCancel(ctx)
	pdone := make(chan struct{})
	writing := make(chan struct{}) // closed when the puts end
	go func() {
		defer close(pdone)
		type state struct {
			polled        bool
			sent          int64 // when the last read that saw none under way was sent
			total, totalS float64
			leader        bool // the node led at a read since then
			open          bool // a snapshot is under way
		}
		st := make([]state, s.kv.nodes())
		after := -1 // reads since the puts ended
		for {
			select {
			case <-writing:
				if after < 0 {
					after = 0
				}
			default:
			}
			anyOpen := false
			for i := range st {
				sent := now()
				m, err := s.kv.metrics(pctx, i)
				if pctx.Err() != nil {
					return
				}
				if err != nil {
					perr.add(err)
					continue
				}
				recv := now()
				n := &st[i]
				inProg := m["lockd_snapshot_in_progress"] > 0
				total, totalS := m["lockd_snapshots_total"], m["lockd_snapshot_seconds_total"]
				leader := m["lockd_leader"] > 0
				if n.polled && total > n.total {
					k := int(total - n.total)
					seen = append(seen, Snapshot{Endpoint: s.kv.endpointOf(i), Leader: n.leader || leader, Count: k,
						Seconds: (totalS - n.totalS) / float64(k), Bytes: uint64(m["lockd_snapshot_last_bytes"]),
						From: time.Duration(n.sent).Seconds(), To: time.Duration(recv).Seconds()})
					spans = append(spans, snapSpan{span{n.sent, recv}, i, n.leader || leader})
					nseen.Add(int64(k))
				}
				if inProg {
					n.open, n.leader = true, n.leader || leader
					anyOpen = true
				} else {
					n.open, n.sent, n.leader = false, sent, leader
				}
				// The time's baseline moves with the count only: the
				// node adds a snapshot's time just before its count.
				if !n.polled || total != n.total {
					n.totalS = totalS
				}
				n.polled, n.total = true, total
			}
			// After the puts end, a snapshot under way is waited for (up
			// to a minute), so that the puts it overlapped are sorted.
			if after >= 0 {
				if !anyOpen || after >= 600 {
					return
				}
				after++
			}
			pauseFor(pctx, 100*time.Millisecond)
		}
	}()

	// The writers: writer w puts every Writers/PutRate seconds, on
	// schedule (a late put starts at once), keys of the load from the
	// watchers' on, round-robin.
	val := s.b.value("")
	first := 0
	if len(cfg.Watchers) > 0 {
		first = slices.Max(cfg.Watchers)
	}
	pool := cfg.Keys - first
	puts := make([][]span, cfg.Writers)
	var errs errorCount
	var done atomic.Int64
	every := time.Duration(float64(time.Second) * float64(cfg.Writers) / cfg.PutRate)
	stop := s.b.ticker(func() string {
		return fmt.Sprintf("%s: %.0fs of %v, %d puts, %d snapshots seen", label, time.Since(t0).Seconds(), cfg.SnapshotWindow, done.Load(), nseen.Load())
	})
	var wg sync.WaitGroup
	for w := range cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Duration(w) * every / time.Duration(cfg.Writers)
			for j := 0; at < cfg.SnapshotWindow && ctx.Err() == nil; j++ {
				if d := at - time.Since(t0); d > 0 {
					pauseFor(ctx, d)
				}
				at += every
				key := fmt.Sprintf("%s/s/%d", s.prefix, w)
				if pool > 0 {
					key = s.key(first + (j*cfg.Writers+w)%pool)
				}
				c0 := now()
				if _, err := s.kv.Put(ctx, w, key, val, nil); err != nil {
					if ctx.Err() == nil {
						errs.add(err)
					}
					continue
				}
				puts[w] = append(puts[w], span{c0, now()})
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(writing)
	stop()
	s.b.progress("%s: puts done; waiting for the snapshots under way", label)
	<-pdone
	stopPoller()

	rows := []Row{{Bench: "kv-put-nosnap", N: cfg.Writers}, {Bench: "kv-put-snap-leader", N: cfg.Writers}, {Bench: "kv-put-snap-follower", N: cfg.Writers}}
	lat := make([]samples, len(rows))
	for _, ws := range puts {
		for _, p := range ws {
			class := 0
			for _, sp := range spans {
				if p.from < sp.to && p.to > sp.from {
					if sp.leader {
						class = 1
						break
					}
					class = 2
				}
			}
			lat[class] = append(lat[class], time.Duration(p.to-p.from))
		}
	}
	for i := range rows {
		s.b.finish(&rows[i], []samples{lat[i]}, &errorCount{})
		rows[i].Seconds = cfg.SnapshotWindow.Seconds()
		rows[i].Rate = float64(rows[i].Ops) / rows[i].Seconds
	}
	errs.fill(&rows[0])
	rows[0].Snapshots = seen
	if rows[0].FirstError == "" && perr.n.Load() > 0 {
		rows[0].FirstError = "reading the metrics: " + perr.first
	}
	for _, r := range rows {
		s.b.progress("%s: %s: %d puts, p50 %s, p99 %s, max %s", label, r.Bench, r.Ops, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max))
	}
	s.b.progress("%s: %d snapshots seen, %d errors", label, len(seen), rows[0].Errors)
	return rows, ctx.Err()
}
