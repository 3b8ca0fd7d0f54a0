package compare

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockd/lockd/bench/load"
)

// etcd's namespace of keys, for the kv rows (load.KV). A key's modify
// index is its ModRevision: like lockd's modify_index, the cluster-wide
// revision of the write that last changed it, 0 for a key that does not
// exist, and the same for every key one transaction writes.
//
//   - Put is a plain Put; with cas, a transaction that puts only if the
//     key's ModRevision is *cas (0: the key does not exist).
//   - Get is a Get with etcd's default consistency, linearizable: the
//     member that answers confirms the leader's commit index (ReadIndex)
//     before it reads, where lockd's leader answers under its lease.
//   - Txn is a transaction with a ModRevision compare per KVCompare and
//     an OpPut per KVPut on success.
//   - WatchKey reads from a watch that stays open between calls, one per
//     watcher and key, as an etcd client watches: the first call opens it
//     at index+1 and waits for the server to confirm it; later calls read
//     its next event. Every watch of a client shares that client's one
//     gRPC stream (one client per endpoint), and each event carries the
//     key's value, which etcd's watches cannot leave out.

// errCASFailed is a cas or compare that did not hold, as the kv-cas row
// counts it.
func errCASFailed(key string, index uint64) error {
	return fmt.Errorf("%s: modify index is not %d: %w", key, index, load.ErrCASFailed)
}

// revision is an etcd revision as a modify index.
func revision(r int64) uint64 {
	return uint64(max(r, 0))
}

func (e *etcd) client(i int) *clientv3.Client { return e.clients[i%len(e.clients)] }

// Put puts key through endpoint i, and returns the key's new ModRevision.
func (e *etcd) Put(ctx context.Context, i int, key string, value []byte, cas *uint64) (uint64, error) {
	c := e.client(i)
	if cas == nil {
		r, err := c.Put(ctx, key, string(value))
		if err != nil {
			return 0, err
		}
		return revision(r.Header.Revision), nil
	}
	cmps, ops := etcdTxn([]load.KVCompare{{Key: key, ModifyIndex: *cas}}, []load.KVPut{{Key: key, Value: value}})
	if cmps == nil {
		return 0, errCASFailed(key, *cas)
	}
	r, err := c.Txn(ctx).If(cmps...).Then(ops...).Commit()
	switch {
	case err != nil:
		return 0, err
	case !r.Succeeded:
		return 0, errCASFailed(key, *cas)
	}
	return revision(r.Header.Revision), nil
}

// Get reads key through endpoint i, linearizably (etcd's default).
func (e *etcd) Get(ctx context.Context, i int, key string) ([]byte, uint64, error) {
	r, err := e.client(i).Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if len(r.Kvs) == 0 {
		return nil, 0, fmt.Errorf("etcd: %s does not exist", key)
	}
	return r.Kvs[0].Value, revision(r.Kvs[0].ModRevision), nil
}

// Txn runs one transaction through endpoint i, and returns whether its
// compares held, and its revision.
func (e *etcd) Txn(ctx context.Context, i int, cmps []load.KVCompare, puts []load.KVPut) (bool, uint64, error) {
	ifs, ops := etcdTxn(cmps, puts)
	if ifs == nil && len(cmps) > 0 {
		return false, 0, nil
	}
	r, err := e.client(i).Txn(ctx).If(ifs...).Then(ops...).Commit()
	if err != nil {
		return false, 0, err
	}
	return r.Succeeded, revision(r.Header.Revision), nil
}

// etcdTxn maps compares and puts to etcd's: ModRevision(key) = index for
// each compare, an OpPut for each put. A compare with an index no
// revision can have (above the largest int64) cannot hold: it returns no
// compares then.
func etcdTxn(cmps []load.KVCompare, puts []load.KVPut) ([]clientv3.Cmp, []clientv3.Op) {
	var ifs []clientv3.Cmp
	for _, c := range cmps {
		if c.ModifyIndex > math.MaxInt64 {
			return nil, nil
		}
		ifs = append(ifs, clientv3.Compare(clientv3.ModRevision(c.Key), "=", int64(c.ModifyIndex)))
	}
	ops := make([]clientv3.Op, len(puts))
	for i, p := range puts {
		ops[i] = clientv3.OpPut(p.Key, string(p.Value))
	}
	return ifs, ops
}

// etcdWatch is one watcher's open watch of a key.
type etcdWatch struct {
	ch     clientv3.WatchChan
	cancel context.CancelFunc
	at     uint64 // the revision up to which it has delivered events
}

type etcdWatchKey struct {
	i   int
	key string
}

// etcdWatches are the open watches, by watcher and key.
type etcdWatches struct {
	mu sync.Mutex
	m  map[etcdWatchKey]*etcdWatch
}

func (ws *etcdWatches) get(k etcdWatchKey) *etcdWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.m[k]
}

func (ws *etcdWatches) put(k etcdWatchKey, w *etcdWatch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[etcdWatchKey]*etcdWatch{}
	}
	ws.m[k] = w
}

// drop closes w and forgets it.
func (ws *etcdWatches) drop(k etcdWatchKey, w *etcdWatch) {
	w.cancel()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m[k] == w {
		delete(ws.m, k)
	}
}

// closeAll closes every open watch.
func (ws *etcdWatches) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for k, w := range ws.m {
		w.cancel()
		delete(ws.m, k)
	}
}

// WatchKey returns the ModRevision of the next change of key after index
// seen by watcher i (through endpoint i), or index if none came within
// wait. A watch left open at another revision (a watcher that started
// over) is closed and opened anew; one whose caller's ctx ended is
// closed.
func (e *etcd) WatchKey(ctx context.Context, i int, key string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	k := etcdWatchKey{i, key}
	w := e.watches.get(k)
	if w != nil && w.at != index {
		e.watches.drop(k, w)
		w = nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	if w == nil {
		if index > math.MaxInt64-1 {
			return 0, fmt.Errorf("etcd: no revision follows %d", index)
		}
		// Not ctx: the watch outlives this call, to deliver the next
		// change to the next one.
		wctx, cancel := context.WithCancel(context.Background())
		opts := []clientv3.OpOption{clientv3.WithCreatedNotify()}
		if index > 0 {
			opts = append(opts, clientv3.WithRev(int64(index)+1))
		}
		w = &etcdWatch{ch: e.client(i).Watch(wctx, key, opts...), cancel: cancel, at: index}
		e.watches.put(k, w)
		select {
		case r, ok := <-w.ch:
			switch {
			case !ok:
				e.watches.drop(k, w)
				return 0, fmt.Errorf("etcd: the watch of %s closed before it was created", key)
			case r.Err() != nil:
				e.watches.drop(k, w)
				return 0, r.Err()
			case !r.Created:
				e.watches.drop(k, w)
				return 0, fmt.Errorf("etcd: the watch of %s answered before it was created", key)
			}
		case <-timer.C:
			e.watches.drop(k, w)
			return index, nil
		case <-ctx.Done():
			e.watches.drop(k, w)
			return 0, ctx.Err()
		}
	}
	if sent != nil {
		sent()
	}
	for {
		select {
		case r, ok := <-w.ch:
			switch {
			case !ok:
				e.watches.drop(k, w)
				return 0, fmt.Errorf("etcd: the watch of %s closed", key)
			case r.Err() != nil:
				e.watches.drop(k, w)
				return 0, r.Err()
			case r.Canceled:
				e.watches.drop(k, w)
				return 0, fmt.Errorf("etcd: the watch of %s was cancelled", key)
			}
			next := index
			for _, ev := range r.Events {
				next = max(next, revision(ev.Kv.ModRevision))
			}
			if next > index {
				w.at = next
				return next, nil
			}
		case <-timer.C:
			return index, nil
		case <-ctx.Done():
			e.watches.drop(k, w)
			return 0, ctx.Err()
		}
	}
}

// etcd has the kv rows' namespace.
var _ load.KV = (*etcd)(nil)
