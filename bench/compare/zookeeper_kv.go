package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockd/lockd/bench/load"
)

// ZooKeeper's namespace, for the kv rows (load.KV). A key is the znode
// "/"+key; a value is its data. Where the mapping differs from lockd's:
//
//   - The modify index is the znode's data version plus one (0: the
//     znode does not exist). ZooKeeper's conditional writes compare a
//     znode's own version, a counter of its changes, not a cluster-wide
//     index: its mzxid is that index, but no write can be made
//     conditional on it. The rows need only what both give: an index
//     read with a value that a conditional write compares, and that
//     grows with each change of the key (for kv-txn, the two keys of a
//     transaction change together, so their versions stay equal).
//   - Put is setData (version -1) and, for a znode that does not exist
//     yet, a create, after creating its parents once (lockd and etcd
//     have no parents to create; that happens at each key's first put,
//     not again). With cas, it is setData with the version (cas 0: a
//     create, which fails if the znode exists).
//   - Get is getData, which the server the client is connected to
//     answers from its own copy without asking the leader: ZooKeeper's
//     reads are not linearizable (a follower may be behind), where lockd
//     and etcd return the latest committed value. A sync before each
//     read would make them so, at a round trip through the leader; the
//     rows read as ZooKeeper's clients usually do, without it.
//   - Txn is a multi: for a key both compared and put, setData with the
//     version (or a create, for a compare with 0); for a key only put, a
//     setData or a create as it exists now (asked before the multi); for
//     a key only compared, a check of its version, or (compare with 0,
//     which no check op expresses) a create and a delete of it.
//   - WatchKey is getData with a watch, the way ZooKeeper's clients wait
//     for a change: a watch fires once, carries no data, and is set
//     again by the next getData. The watcher has the change when the
//     notification arrives; the next call's getData (which sets the
//     watch again) is not timed.
//
// Worker (or watcher) i has a session of its own, connected to server i
// mod n, as the locks rows' sessions are: ZooKeeper ties a session, and
// the watches it sets, to one TCP connection, so 1,000 watchers are 1,000
// sessions. (ZooKeeper's default allows a client address 60 connections
// per server; `make bench-compare` lifts that, as it does lockd's.)

// zkKVTimeout is the kv rows' sessions' timeout.
const zkKVTimeout = 30 * time.Second

// zkKVConn is worker i's session, connected at its first use.
type zkKVConn struct {
	mu   sync.Mutex
	conn *zk.Conn
}

// kvConn returns the session of worker i, connecting it if need be.
func (z *zookeeper) kvConn(ctx context.Context, i int) (*zk.Conn, error) {
	z.mu.Lock()
	if z.kv == nil {
		z.kv = map[int]*zkKVConn{}
	}
	c := z.kv[i]
	if c == nil {
		c = &zkKVConn{}
		z.kv[i] = c
	}
	z.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := zkConnect(cctx, []string{z.servers[i%len(z.servers)]}, zkKVTimeout, false)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// closeKV closes the kv rows' sessions.
func (z *zookeeper) closeKV() {
	z.mu.Lock()
	conns := z.kv
	z.kv = nil
	z.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
		}
		c.mu.Unlock()
	}
}

// znode is the path of key.
func znode(key string) string { return "/" + strings.Trim(key, "/") }

// parentOf is the path of the znode above path ("" for a child of /).
func parentOf(path string) string { return path[:strings.LastIndex(path, "/")] }

// zkIndex is the modify index of a znode with stat.
func zkIndex(stat *zk.Stat) uint64 {
	return uint64(max(stat.Version, 0)) + 1
}

// zkVersion is the version a znode of modify index index has; false if
// none does (0: the znode does not exist).
func zkVersion(index uint64) (int32, bool) {
	if index == 0 || index-1 > math.MaxInt32 {
		return 0, false
	}
	return int32(index - 1), true
}

// ensureParents creates the znodes above path, once per path.
func (z *zookeeper) ensureParents(conn *zk.Conn, path string) error {
	if p := parentOf(path); p != "" {
		return z.parents(conn, p)
	}
	return nil
}

// Put writes key through worker i's session and returns its new modify
// index.
func (z *zookeeper) Put(ctx context.Context, i int, key string, value []byte, cas *uint64) (uint64, error) {
	conn, err := z.kvConn(ctx, i)
	if err != nil {
		return 0, err
	}
	path := znode(key)
	if cas == nil {
		st, err := conn.Set(path, value, -1)
		if !errors.Is(err, zk.ErrNoNode) {
			if err != nil {
				return 0, err
			}
			return zkIndex(st), nil
		}
		if err := z.create(conn, path, value); !errors.Is(err, zk.ErrNodeExists) {
			return 1, err
		}
		if st, err = conn.Set(path, value, -1); err != nil { // created meanwhile
			return 0, err
		}
		return zkIndex(st), nil
	}
	if *cas == 0 {
		err := z.create(conn, path, value)
		if errors.Is(err, zk.ErrNodeExists) {
			return 0, errCASFailed(key, 0)
		}
		return 1, err
	}
	v, ok := zkVersion(*cas)
	if !ok {
		return 0, errCASFailed(key, *cas)
	}
	st, err := conn.Set(path, value, v)
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return 0, errCASFailed(key, *cas)
	case err != nil:
		return 0, err
	}
	return zkIndex(st), nil
}

// create creates the znode path with value (its parents first, once).
func (z *zookeeper) create(conn *zk.Conn, path string, value []byte) error {
	if err := z.ensureParents(conn, path); err != nil {
		return err
	}
	_, err := conn.Create(path, value, 0, zkACL)
	return err
}

// Get reads key through worker i's session (getData: the connected
// server's copy).
func (z *zookeeper) Get(ctx context.Context, i int, key string) ([]byte, uint64, error) {
	conn, err := z.kvConn(ctx, i)
	if err != nil {
		return nil, 0, err
	}
	v, st, err := conn.Get(znode(key))
	if err != nil {
		return nil, 0, fmt.Errorf("zookeeper: %s: %w", key, err)
	}
	return v, zkIndex(st), nil
}

// Txn runs one multi through worker i's session; it returns whether the
// compares held, and the new modify index of the first key put.
func (z *zookeeper) Txn(ctx context.Context, i int, cmps []load.KVCompare, puts []load.KVPut) (bool, uint64, error) {
	conn, err := z.kvConn(ctx, i)
	if err != nil {
		return false, 0, err
	}
	compared := map[string]bool{}
	for _, c := range cmps {
		compared[znode(c.Key)] = true
	}
	exists := map[string]bool{}
	for _, p := range puts {
		path := znode(p.Key)
		if compared[path] {
			continue
		}
		ok, _, err := conn.Exists(path)
		if err != nil {
			return false, 0, err
		}
		exists[path] = ok
	}
	ops, ok := zkTxnOps(cmps, puts, exists)
	if !ok {
		return false, 0, nil
	}
	for _, op := range ops {
		if c, ok := op.(*zk.CreateRequest); ok {
			if err := z.ensureParents(conn, c.Path); err != nil {
				return false, 0, err
			}
		}
	}
	res, err := conn.Multi(ops...)
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists):
		return false, 0, nil
	case err != nil:
		return false, 0, err
	}
	return true, zkTxnIndex(ops, res), nil
}

// zkTxnOps maps compares and puts to the ops of one multi (see the
// mapping above); exists says, for each key put but not compared,
// whether it exists. It returns false for a compare that no znode can
// meet (an index above any version).
func zkTxnOps(cmps []load.KVCompare, puts []load.KVPut, exists map[string]bool) ([]any, bool) {
	put := map[string]bool{}
	for _, p := range puts {
		put[znode(p.Key)] = true
	}
	var ops []any
	want := map[string]uint64{} // the first compare of each key
	for _, c := range cmps {
		path := znode(c.Key)
		if index, seen := want[path]; !seen {
			want[path] = c.ModifyIndex
			if put[path] {
				continue // the put checks it
			}
		} else if index == c.ModifyIndex {
			continue // the same compare again
		}
		if c.ModifyIndex == 0 {
			ops = append(ops, &zk.CreateRequest{Path: path, Acl: zkACL}, &zk.DeleteRequest{Path: path, Version: 0})
			continue
		}
		v, ok := zkVersion(c.ModifyIndex)
		if !ok {
			return nil, false
		}
		ops = append(ops, &zk.CheckVersionRequest{Path: path, Version: v})
	}
	made := map[string]bool{} // put by an earlier op of this multi
	for _, p := range puts {
		path := znode(p.Key)
		index, compared := want[path]
		switch {
		case made[path]:
			ops = append(ops, &zk.SetDataRequest{Path: path, Data: p.Value, Version: -1})
		case compared && index == 0:
			ops = append(ops, &zk.CreateRequest{Path: path, Data: p.Value, Acl: zkACL})
		case compared:
			v, ok := zkVersion(index)
			if !ok {
				return nil, false
			}
			ops = append(ops, &zk.SetDataRequest{Path: path, Data: p.Value, Version: v})
		case exists[path]:
			ops = append(ops, &zk.SetDataRequest{Path: path, Data: p.Value, Version: -1})
		default:
			ops = append(ops, &zk.CreateRequest{Path: path, Data: p.Value, Acl: zkACL})
		}
		made[path] = true
	}
	return ops, true
}

// zkTxnIndex is the modify index a successful multi left on the first
// key it put: 1 for a create, the new version plus one for a setData;
// 0 if it put nothing.
func zkTxnIndex(ops []any, res []zk.MultiResponse) uint64 {
	for i, op := range ops {
		switch op.(type) {
		case *zk.CreateRequest:
			if i+1 < len(ops) { // a create and delete that checked absence
				if d, ok := ops[i+1].(*zk.DeleteRequest); ok && d.Path == op.(*zk.CreateRequest).Path {
					continue
				}
			}
			return 1
		case *zk.SetDataRequest:
			if i < len(res) && res[i].Stat != nil {
				return zkIndex(res[i].Stat)
			}
			return 0
		}
	}
	return 0
}

// WatchKey sets a watch on key with getData through watcher i's session
// (exists, if the znode does not exist) and waits for it to fire. If the
// key changed after index already, it returns its modify index at once;
// on a notification, index+1 (a notification carries no version; the
// next call reads it). sent is called once the watch is set.
func (z *zookeeper) WatchKey(ctx context.Context, i int, key string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	conn, err := z.kvConn(ctx, i)
	if err != nil {
		return 0, err
	}
	path := znode(key)
	var now uint64
	_, st, ch, err := conn.GetW(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		var ok bool
		ok, st, ch, err = conn.ExistsW(path)
		if err != nil {
			return 0, err
		}
		if ok {
			now = zkIndex(st)
		}
	case err != nil:
		return 0, err
	default:
		now = zkIndex(st)
	}
	if sent != nil {
		sent()
	}
	if now != index {
		return now, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case ev := <-ch:
		if ev.Err != nil {
			return 0, ev.Err
		}
		if ev.Type == zk.EventNotWatching {
			return 0, fmt.Errorf("zookeeper: the watch of %s ended", path)
		}
		return index + 1, nil
	case <-timer.C:
		return index, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// ZooKeeper has the kv rows' namespace.
var _ load.KV = (*zookeeper)(nil)
