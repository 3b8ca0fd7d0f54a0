package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// KV is a System with a namespace of keys, for the kv rows. It is apart
// from System, so that a System without one still runs the other rows:
// lockd implements it here, and bench/compare's etcd and ZooKeeper
// there (etcd_kv.go, zookeeper_kv.go); the kv rows refuse a system
// that does not.
type KV interface {
	// Put writes value to key through endpoint i (as NewSession spreads
	// sessions), and returns the index of the write, which is the key's
	// new modify index. With cas set it writes only if the key's modify
	// index is *cas (0: only if it does not exist), and returns an error
	// matching ErrCASFailed otherwise.
	Put(ctx context.Context, i int, key string, value []byte, cas *uint64) (uint64, error)
	// Get reads key through endpoint i (lockd: a default read, which the
	// leader answers under its lease), and returns its value and modify
	// index.
	Get(ctx context.Context, i int, key string) ([]byte, uint64, error)
	// Txn is one transaction through endpoint i: if every compare holds,
	// it writes the puts; it returns whether it did, and the index of its
	// entry.
	Txn(ctx context.Context, i int, cmps []KVCompare, puts []KVPut) (bool, uint64, error)
	// WatchKey waits through endpoint i for a change of key after index,
	// or for wait to run out, and returns the index to pass next (index
	// itself if nothing changed). sent, if not nil, is called once the
	// request is on its way.
	WatchKey(ctx context.Context, i int, key string, index uint64, wait time.Duration, sent func()) (uint64, error)
}

// KVCompare holds if Key's modify index is ModifyIndex (0: the key does
// not exist).
type KVCompare struct {
	Key         string
	ModifyIndex uint64
}

// KVPut is a put of a transaction.
type KVPut struct {
	Key   string
	Value []byte
}

// ErrCASFailed is a put whose cas did not hold (lockd: 409 cas_failed):
// the kv-cas row counts it as a conflict, not an error.
var ErrCASFailed error = &api.Error{Code: api.CodeCASFailed, Message: "cas failed"}

// kv returns the row's system as a KV, or an error wrapping
// errors.ErrUnsupported.
func (b *bench) kv() (KV, error) {
	kv, ok := b.sys.(KV)
	if !ok {
		return nil, fmt.Errorf("the kv rows need a system with a namespace of keys (lockd): %w", errors.ErrUnsupported)
	}
	return kv, nil
}

// KVRows measures the namespace: the kv-put, kv-get, kv-cas and kv-txn
// rows for each count of Workers, then a kv-watch row for each count of
// Fanout.
func KVRows(ctx context.Context, cfg Config) ([]Row, error) {
	b := newBench(cfg)
	var rows []Row
	for _, row := range []func(*bench, context.Context, int) (Row, error){(*bench).kvPut, (*bench).kvGet, (*bench).kvCAS, (*bench).kvTxn} {
		got, err := b.rows(ctx, cfg.Workers, row)
		rows = append(rows, got...)
		if err != nil {
			return rows, err
		}
	}
	got, err := b.rows(ctx, cfg.Fanout, (*bench).kvWatch)
	return append(rows, got...), err
}

// value returns a value of the row's size that starts with s.
func (b *bench) value(s string) []byte {
	v := make([]byte, max(b.cfg.ValueSize, len(s)))
	copy(v, s)
	for i := len(s); i < len(v); i++ {
		v[i] = 'x'
	}
	return v
}

// kvLoop runs op in each of workers loops for the row's duration, and
// fills in row from the ops that ended in that time. op returns false,
// nil for an op that did not count and was no error (a cas conflict).
func (b *bench) kvLoop(ctx context.Context, row *Row, workers int, label string, errs *errorCount, op func(ctx context.Context, w int) (bool, error)) error {
	var done atomic.Int64
	lat := make([]samples, workers)
	start := time.Now()
	end := start.Add(b.cfg.Duration)
	stop := b.ticker(func() string {
		return fmt.Sprintf("%s: %.0fs of %v, %d ops", label, time.Since(start).Seconds(), b.cfg.Duration, done.Load())
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
				ok, err := op(rctx, w)
				if err != nil {
					errs.add(err)
					pause(rctx)
					continue
				}
				if c1 := time.Now(); ok && c1.Before(end) {
					lat[w] = append(lat[w], c1.Sub(c0))
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop()
	b.finish(row, lat, errs)
	b.progress("%s: %.0f ops/s, p50 %s, p99 %s, %d errors", label, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), row.Errors)
	return ctx.Err()
}

// kvPut: each worker puts values to a key of its own, again and again.
func (b *bench) kvPut(ctx context.Context, workers int) (Row, error) {
	row := Row{Bench: "kv-put", N: workers}
	kv, err := b.kv()
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("bench/kv/%s/put/%d", b.run, workers)
	val := b.value("")
	var errs errorCount
	err = b.kvLoop(ctx, &row, workers, fmt.Sprintf("kv-put, %d workers", workers), &errs, func(ctx context.Context, w int) (bool, error) {
		_, err := kv.Put(ctx, w, fmt.Sprintf("%s/%d", prefix, w), val, nil)
		return err == nil, err
	})
	return row, err
}

// kvGet: each worker reads a key of its own, written before the measured
// time, again and again.
func (b *bench) kvGet(ctx context.Context, workers int) (Row, error) {
	row := Row{Bench: "kv-get", N: workers}
	kv, err := b.kv()
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("bench/kv/%s/get/%d", b.run, workers)
	val := b.value("")
	t0 := time.Now()
	for w := range workers {
		if _, err := kv.Put(ctx, w, fmt.Sprintf("%s/%d", prefix, w), val, nil); err != nil {
			return row, fmt.Errorf("kv-get, %d workers: setup: %w", workers, err)
		}
	}
	row.Setup = time.Since(t0).Seconds()
	var errs errorCount
	err = b.kvLoop(ctx, &row, workers, fmt.Sprintf("kv-get, %d workers", workers), &errs, func(ctx context.Context, w int) (bool, error) {
		v, _, err := kv.Get(ctx, w, fmt.Sprintf("%s/%d", prefix, w))
		if err == nil && len(v) != len(val) {
			err = fmt.Errorf("read %d bytes of %s/%d, want %d", len(v), prefix, w, len(val))
		}
		return err == nil, err
	})
	return row, err
}

// kvCAS: the workers increment counters on HotKeys keys, worker w on key
// w mod HotKeys, each with a read and a put with cas on the index read;
// a put that lost the race (cas_failed) counts in CASFailed and the
// worker reads again. Ops are the increments made, their latency from the
// first read to the put that succeeded. At the end the counters must sum
// to every increment made.
func (b *bench) kvCAS(ctx context.Context, workers int) (Row, error) {
	row := Row{Bench: "kv-cas", N: workers, Keys: b.cfg.HotKeys}
	kv, err := b.kv()
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("bench/kv/%s/cas/%d", b.run, workers)
	key := func(w int) string { return fmt.Sprintf("%s/%d", prefix, w%b.cfg.HotKeys) }
	t0 := time.Now()
	for k := range b.cfg.HotKeys {
		if _, err := kv.Put(ctx, k, key(k), b.value("0 "), nil); err != nil {
			return row, fmt.Errorf("kv-cas, %d workers: setup: %w", workers, err)
		}
	}
	row.Setup = time.Since(t0).Seconds()
	var errs errorCount
	var conflicts, made atomic.Int64
	label := fmt.Sprintf("kv-cas, %d workers on %d keys", workers, b.cfg.HotKeys)
	err = b.kvLoop(ctx, &row, workers, label, &errs, func(ctx context.Context, w int) (bool, error) {
		for {
			v, idx, err := kv.Get(ctx, w, key(w))
			if err != nil {
				return false, err
			}
			n, err := counter(v)
			if err != nil {
				return false, fmt.Errorf("%s: %w", key(w), err)
			}
			_, err = kv.Put(ctx, w, key(w), b.value(strconv.FormatInt(n+1, 10)+" "), &idx)
			switch {
			case err == nil:
				made.Add(1)
				return true, nil
			case errors.Is(err, ErrCASFailed):
				conflicts.Add(1)
				if ctx.Err() != nil {
					return false, nil
				}
			default:
				return false, err
			}
		}
	})
	row.CASFailed = conflicts.Load()
	var sum int64
	for k := range b.cfg.HotKeys {
		v, _, err := kv.Get(ctx, k, key(k))
		if err == nil {
			var n int64
			n, err = counter(v)
			sum += n
		}
		if err != nil {
			errs.add(fmt.Errorf("reading the counter %s at the end: %w", key(k), err))
		}
	}
	if sum != made.Load() {
		errs.add(fmt.Errorf("the counters sum to %d, and %d increments were acknowledged", sum, made.Load()))
	}
	errs.fill(&row)
	return row, err
}

// counter parses the number a kv-cas value starts with.
func counter(v []byte) (int64, error) {
	for i, c := range v {
		if c == ' ' {
			return strconv.ParseInt(string(v[:i]), 10, 64)
		}
	}
	return 0, fmt.Errorf("value %.20q holds no counter", v)
}

// kvTxn: each worker runs transactions on two keys of its own: compare
// both keys' modify indexes with those its last transaction left, and put
// both. Nothing else writes them, so every transaction must succeed.
func (b *bench) kvTxn(ctx context.Context, workers int) (Row, error) {
	row := Row{Bench: "kv-txn", N: workers}
	kv, err := b.kv()
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("bench/kv/%s/txn/%d", b.run, workers)
	val := b.value("")
	last := make([]uint64, workers) // 0: the keys do not exist yet
	var errs errorCount
	err = b.kvLoop(ctx, &row, workers, fmt.Sprintf("kv-txn, %d workers", workers), &errs, func(ctx context.Context, w int) (bool, error) {
		a, c := fmt.Sprintf("%s/%d/a", prefix, w), fmt.Sprintf("%s/%d/b", prefix, w)
		ok, idx, err := kv.Txn(ctx, w, []KVCompare{{a, last[w]}, {c, last[w]}}, []KVPut{{a, val}, {c, val}})
		switch {
		case err != nil:
			return false, err
		case !ok:
			return false, fmt.Errorf("a transaction on %s and %s failed its compares (modify index %d), and nothing else writes them", a, c, last[w])
		}
		last[w] = idx
		return true, nil
	})
	return row, err
}

// kvWatch: n watchers watch one key (watcher i through endpoint i); one
// writer puts it, waits until every watcher has the change, and puts
// again, for the row's duration. Ops are the puts every watcher saw, their
// latency from the put's answer until the last watcher had the change (0
// if every watcher had it before the answer came).
func (b *bench) kvWatch(ctx context.Context, n int) (Row, error) {
	row := Row{Bench: "kv-watch", N: n}
	label := fmt.Sprintf("kv-watch, %d watchers", n)
	kv, err := b.kv()
	if err != nil {
		return row, err
	}
	if err := b.openFiles(n); err != nil {
		return row, err
	}
	key := fmt.Sprintf("bench/kv/%s/watch/%d", b.run, n)
	val := b.value("")
	index, err := kv.Put(ctx, 0, key, val, nil)
	if err != nil {
		return row, fmt.Errorf("%s: setup: %w", label, err)
	}

	type round struct {
		left atomic.Int64
		last atomic.Int64 // ns after t0 of the latest arrival
		done chan struct{}
	}
	t0 := time.Now()
	var cur atomic.Pointer[round]
	var parked atomic.Int64
	var errs errorCount
	wctx, stopWatchers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWatchers(); wg.Wait() }()
	slots := make(chan struct{}, 64) // bounds the watches being dialled at once
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idx, first, fails := index, true, 0
			for wctx.Err() == nil {
				select {
				case <-wctx.Done():
					return
				case slots <- struct{}{}:
				}
				var once sync.Once
				free := func() { once.Do(func() { <-slots }) }
				next, err := kv.WatchKey(wctx, i, key, idx, time.Minute, func() {
					free()
					if first {
						first = false
						parked.Add(1)
					}
				})
				free()
				got := time.Since(t0)
				switch {
				case wctx.Err() != nil:
					return
				case err != nil:
					errs.add(err)
					backoff(wctx, fails)
					fails++
					continue
				case next <= idx: // the wait ran out
					continue
				}
				fails, idx = 0, next
				if r := cur.Load(); r != nil {
					for {
						l := r.last.Load()
						if int64(got) <= l || r.last.CompareAndSwap(l, int64(got)) {
							break
						}
					}
					if r.left.Add(-1) == 0 {
						close(r.done)
					}
				}
			}
		}()
	}
	for parked.Load() < int64(n) && ctx.Err() == nil && time.Since(t0) < b.cfg.SetupTimeout {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	row.Setup = time.Since(t0).Seconds()
	row.Parked = parked.Load()
	if row.Parked < int64(n) {
		return row, fmt.Errorf("%s: only %d watches sent after %.1fs", label, row.Parked, row.Setup)
	}
	select { // the server reads the last watches a moment after they were written
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	b.progress("%s: watching, set up in %.1fs", label, row.Setup)

	var lat samples
	end := time.Now().Add(b.cfg.Duration)
	var seen atomic.Int64
	stopTicker := b.ticker(func() string { return fmt.Sprintf("%s: %d puts seen by all", label, seen.Load()) })
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(stopTicker) }
	defer stop()
	for time.Now().Before(end) && ctx.Err() == nil {
		r := &round{done: make(chan struct{})}
		r.left.Store(int64(n))
		cur.Store(r)
		if _, err := kv.Put(ctx, 0, key, val, nil); err != nil {
			errs.add(err)
			cur.Store(nil)
			pause(ctx)
			continue
		}
		answered := time.Since(t0)
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			errs.fill(&row)
			return row, fmt.Errorf("%s: %d watchers had not seen a put 30s after its answer", label, r.left.Load())
		case <-ctx.Done():
			return row, ctx.Err()
		}
		lat = append(lat, max(0, time.Duration(r.last.Load())-answered))
		seen.Add(1)
	}
	stop()
	b.finish(&row, []samples{lat}, &errs)
	b.progress("%s: %.0f puts/s seen by all, put answer to last watcher p50 %s, p99 %s, %d errors", label, row.Rate, ms(row.Latency.P50), ms(row.Latency.P99), row.Errors)
	return row, ctx.Err()
}

// Put writes key with PUT /v1/kv/{key}.
func (a *lockd) Put(ctx context.Context, i int, key string, value []byte, cas *uint64) (uint64, error) {
	var r api.KVPutResponse
	err := a.do(ctx, a.endpoint(i), http.MethodPut, "/v1/kv/"+key, api.KVPutRequest{Value: value, CAS: cas}, &r)
	return r.Index, err
}

// Get reads key with GET /v1/kv/{key}, a default read.
func (a *lockd) Get(ctx context.Context, i int, key string) ([]byte, uint64, error) {
	var r api.KVRead
	if err := a.do(ctx, a.endpoint(i), http.MethodGet, "/v1/kv/"+key, nil, &r); err != nil {
		return nil, 0, err
	}
	if r.KV == nil {
		return nil, 0, fmt.Errorf("GET /v1/kv/%s: no record", key)
	}
	return r.KV.Value, r.KV.ModifyIndex, nil
}

// Txn sends POST /v1/txn: compares of modify_index, puts on success.
func (a *lockd) Txn(ctx context.Context, i int, cmps []KVCompare, puts []KVPut) (bool, uint64, error) {
	var req api.TxnRequest
	for _, c := range cmps {
		req.Compare = append(req.Compare, api.Compare{Key: c.Key, Target: api.TargetModifyIndex, Op: "=", Number: &c.ModifyIndex})
	}
	for _, p := range puts {
		req.Success = append(req.Success, api.TxnOp{Put: &api.TxnPut{Key: p.Key, Value: p.Value}})
	}
	var r api.TxnResponse
	err := a.do(ctx, a.endpoint(i), http.MethodPost, "/v1/txn", req, &r)
	return r.Succeeded, r.Index, err
}

// WatchKey sends GET /v1/kv/{key}?watch&index=&wait=&keys (without
// values: the row measures the notification). An answer without events
// (the wait ran out) returns index.
func (a *lockd) WatchKey(ctx context.Context, i int, key string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {wait.String()}}.Encode()
	var r api.KVEvents
	if err := a.doSent(ctx, a.endpoint(i), http.MethodGet, "/v1/kv/"+key+"?watch&keys&"+q, nil, &r, sent); err != nil {
		return 0, err
	}
	if len(r.Events) == 0 {
		return index, nil
	}
	return r.Index, nil
}

// watchKV sends GET /v1/kv/{key}?watch&keys (or, with prefix,
// GET /v1/kv?prefix=&watch&keys), with ?stale if asked, and returns the
// index to pass next and the number of events.
func (a *lockd) watchKV(ctx context.Context, i int, key string, prefix, stale bool, index uint64, wait time.Duration, sent func()) (uint64, int, error) {
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {wait.String()}}
	path := "/v1/kv/" + key + "?watch&keys"
	if prefix {
		q.Set("prefix", key)
		path = "/v1/kv?watch&keys"
	}
	if stale {
		path += "&stale"
	}
	var r api.KVEvents
	if err := a.doSent(ctx, a.endpoint(i), http.MethodGet, path+"&"+q.Encode(), nil, &r, sent); err != nil {
		return 0, 0, err
	}
	if len(r.Events) == 0 {
		return max(index, r.Index), 0, nil
	}
	return r.Index, len(r.Events), nil
}

func (a *lockd) nodes() int { return len(a.endpoints) }

func (a *lockd) endpointOf(i int) string { return a.endpoint(i) }

// text GETs base+path and returns the body of a 200 answer, or the
// status of another.
func (a *lockd) text(ctx context.Context, base, path string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, fmt.Errorf("GET %s%s: HTTP %d: %.200s", base, path, resp.StatusCode, b)
	}
	return string(b), resp.StatusCode, nil
}

// metrics reads the series without labels of endpoint i's /metrics.
func (a *lockd) metrics(ctx context.Context, i int) (map[string]float64, error) {
	body, _, err := a.text(ctx, a.endpoint(i), "/metrics")
	if err != nil {
		return nil, err
	}
	m := make(map[string]float64)
	for _, line := range strings.Split(body, "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}

// heapAfterGC reads HeapAlloc from endpoint i's heap profile taken after
// a collection (/debug/pprof/heap?gc=1&debug=1); a 404 (the node does
// not serve profiles) is ok false.
func (a *lockd) heapAfterGC(ctx context.Context, i int) (uint64, bool, error) {
	body, status, err := a.text(ctx, a.endpoint(i), "/debug/pprof/heap?gc=1&debug=1")
	if status == http.StatusNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil, err
		}
	}
	return 0, false, fmt.Errorf("the heap profile of %s has no HeapAlloc line", a.endpoint(i))
}
