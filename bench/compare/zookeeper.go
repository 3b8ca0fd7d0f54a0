package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockd/lockd/bench/load"
)

// zookeeper is the System of a ZooKeeper ensemble, through
// go-zookeeper/zk: a session is a zk.Conn (a ZooKeeper session belongs to
// one TCP connection), session i connected to server i mod n.
//
// A blocking acquire is the client's lock recipe (zk.Lock): create an
// ephemeral sequential node under the lock's path, list the children, and
// while ours is not the lowest, wait for the next lower one to go. A
// release deletes our node. The recipe has no try-lock, so TryAcquire
// does the recipe's first two steps and, if ours is not the lowest,
// deletes it again: for an uncontended lock that is exactly the recipe's
// work (a create and a getChildren, then a delete to release).
type zookeeper struct {
	servers []string
	// made holds the lock paths whose parent znodes are known to exist.
	mu   sync.Mutex
	made map[string]bool
	kv   map[int]*zkKVConn // the kv rows' sessions, by worker (zookeeper_kv.go)
}

func newZooKeeper(servers []string) (*zookeeper, error) {
	if len(servers) == 0 {
		return nil, errors.New("zookeeper: no servers")
	}
	return &zookeeper{servers: servers, made: map[string]bool{}}, nil
}

func (z *zookeeper) Close() error {
	z.closeKV()
	return nil
}

var zkACL = zk.WorldACL(zk.PermAll)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// NewSession connects to server i mod n and waits until the session is
// established. ZooKeeper bounds the session timeout by its own settings
// (20 ticks, 40 s, by default); the client pings every third of it.
func (z *zookeeper) NewSession(ctx context.Context, i int, ttl time.Duration) (load.Session, error) {
	server := z.servers[i%len(z.servers)]
	conn, events, err := zk.Connect([]string{server}, ttl, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("zookeeper %s: connection closed before the session was established", server)
			}
			if ev.State == zk.StateHasSession {
				return &zkSession{sys: z, conn: conn, tried: map[string]string{}, locks: map[string]*zk.Lock{}}, nil
			}
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		case <-timeout.C:
			conn.Close()
			return nil, fmt.Errorf("zookeeper %s: no session after 30s", server)
		}
	}
}

func (z *zookeeper) Writes(context.Context) (uint64, error) {
	return 0, fmt.Errorf("zookeeper: counting writes is not implemented: %w", errors.ErrUnsupported)
}

// zookeeperLeads asks the member at server with the srvr four-letter word
// whether it leads.
func zookeeperLeads(ctx context.Context, server string) (bool, error) {
	mode, err := zookeeperMode(ctx, server)
	return mode == "leader", err
}

// zookeeperMode is the mode the member at server states in its answer to
// the srvr four-letter word (leader, follower or standalone); an error if
// it states none, as while it is not serving.
func zookeeperMode(ctx context.Context, server string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if mode, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("zookeeper %s: no mode in its srvr answer %.100q", server, b)
}

// NotApplicable: ZooKeeper has no counterpart of the keepalive rows,
// nor of the etcd-API rows.
func (z *zookeeper) NotApplicable(bench string) string {
	switch bench {
	case "keepalive":
		return ZooKeeperKeepalive
	case EtcdAPIBench:
		return notEtcdAPI
	}
	return ""
}

// ZooKeeperKeepalive says why the keepalive rows do not apply to
// ZooKeeper.
const ZooKeeperKeepalive = "a ZooKeeper session belongs to its TCP connection and is kept alive by " +
	"that connection's pings, which the client library sends by itself every third of the timeout " +
	"and the server answers without a write; there is no request that renews a session from another " +
	"connection, so N sessions need N connections and a few callers cannot renew many sessions"

type zkSession struct {
	sys   *zookeeper
	conn  *zk.Conn
	tried map[string]string   // lock name -> our node, taken by TryAcquire
	locks map[string]*zk.Lock // lock name -> the recipe's lock, taken by Acquire
}

func (s *zkSession) ID() string { return fmt.Sprintf("%x", s.conn.SessionID()) }

// KeepAlive is never called: the keepalive rows do not apply.
func (s *zkSession) KeepAlive(context.Context) error {
	return fmt.Errorf("zookeeper: %s: %w", ZooKeeperKeepalive, errors.ErrUnsupported)
}

func lockPath(name string) string { return "/" + strings.Trim(name, "/") }

func (s *zkSession) TryAcquire(ctx context.Context, name string) error {
	path := lockPath(name)
	node, err := s.conn.CreateProtectedEphemeralSequential(path+"/lock-", nil, zkACL)
	if errors.Is(err, zk.ErrNoNode) {
		if err = s.sys.parents(s.conn, path); err == nil {
			node, err = s.conn.CreateProtectedEphemeralSequential(path+"/lock-", nil, zkACL)
		}
	}
	if err != nil {
		return err
	}
	children, _, err := s.conn.Children(path)
	if err != nil {
		_ = s.conn.Delete(node, -1) // best effort: the node is ephemeral and goes with the session
		return err
	}
	ours, err := sequence(node)
	if err != nil {
		return err
	}
	for _, c := range children {
		if n, err := sequence(c); err == nil && n < ours {
			if err := s.conn.Delete(node, -1); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s holds %s", load.ErrLockHeld, c, path)
		}
	}
	s.tried[name] = node
	return nil
}

// sequence is a lock node's sequence number, as the recipe reads it.
func sequence(node string) (int, error) {
	i := strings.LastIndex(node, "lock-")
	if i < 0 {
		return 0, fmt.Errorf("zookeeper: %q is not a lock node", node)
	}
	return strconv.Atoi(node[i+len("lock-"):])
}

// parents creates the znodes above a lock's path, as the recipe does on
// its first use of a path.
func (z *zookeeper) parents(conn *zk.Conn, path string) error {
	z.mu.Lock()
	done := z.made[path]
	z.mu.Unlock()
	if done {
		return nil
	}
	at := ""
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		at += "/" + p
		if _, err := conn.Create(at, nil, 0, zkACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	z.mu.Lock()
	z.made[path] = true
	z.mu.Unlock()
	return nil
}

// Acquire is the recipe's Lock. The recipe cannot bound its wait, so wait
// is not honoured: it returns once the lock is granted or the session
// ends. If ctx ends first, the session is closed, which ends the wait.
func (s *zkSession) Acquire(ctx context.Context, name string, wait time.Duration) error {
	l := s.locks[name]
	if l == nil {
		l = zk.NewLock(s.conn, lockPath(name), zkACL)
		s.locks[name] = l
	}
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		s.conn.Close()
		<-done //nolint:errcheck // the lock attempt fails with the closed connection; ctx.Err() is the answer
		return ctx.Err()
	}
}

func (s *zkSession) Release(ctx context.Context, name string) error {
	if node, ok := s.tried[name]; ok {
		delete(s.tried, name)
		return s.conn.Delete(node, -1)
	}
	l := s.locks[name]
	if l == nil {
		return fmt.Errorf("zookeeper: release of %s, which this session does not hold", name)
	}
	err := l.Unlock()
	if err != nil {
		// A fresh recipe lock, so that the next Acquire does not fail
		// with zk.ErrDeadlock; the node goes with the session.
		s.locks[name] = zk.NewLock(s.conn, lockPath(name), zkACL)
	}
	return err
}

// Destroy closes the connection, which ends the session and deletes its
// ephemeral nodes.
func (s *zkSession) Destroy(context.Context) error {
	s.conn.Close()
	return nil
}

// zkPeer is a ZooKeeper ensemble during failover trials.
type zkPeer struct {
	servers []string
	ttl     time.Duration
}

// whole wants every member to answer srvr as a leader or a follower, and
// one of them to lead.
func (z *zkPeer) whole(ctx context.Context) error {
	leaders := 0
	for _, s := range z.servers {
		mode, err := zookeeperMode(ctx, s)
		switch {
		case err != nil:
			return err
		case mode == "leader":
			leaders++
		case mode != "follower":
			return fmt.Errorf("zookeeper %s: mode %s", s, mode)
		}
	}
	if leaders != 1 {
		return fmt.Errorf("zookeeper: %d leaders", leaders)
	}
	return nil
}

// zkConnect connects to servers and waits for a session. With failFast,
// a connection the server drops before the session is up (as one that
// is not serving does) ends the wait at once, where the client would
// sleep a second and try again.
func zkConnect(ctx context.Context, servers []string, ttl time.Duration, failFast bool) (*zk.Conn, error) {
	conn, events, err := zk.Connect(servers, ttl, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("zookeeper %v: connection closed before the session was established", servers)
			}
			switch ev.State {
			case zk.StateHasSession:
				return conn, nil
			case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
				if failFast {
					conn.Close()
					return nil, fmt.Errorf("zookeeper %s: %v", ev.Server, ev.State)
				}
			}
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
}

// prepare connects one session to the survivors and creates the
// directory the tries create their nodes in.
func (z *zkPeer) prepare(ctx context.Context, survivors []int, prefix string) (prober, error) {
	p := &zkProber{dir: prefix, ttl: z.ttl}
	for _, i := range survivors {
		p.servers = append(p.servers, z.servers[i])
	}
	conn, err := zkConnect(ctx, p.servers, z.ttl, false)
	if err != nil {
		return nil, err
	}
	p.conn = conn
	at := ""
	for _, part := range strings.Split(strings.Trim(prefix, "/"), "/") {
		at += "/" + part
		if _, err := conn.Create(at, nil, 0, zkACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			conn.Close()
			return nil, err
		}
	}
	return p, nil
}

type zkProber struct {
	dir     string
	ttl     time.Duration
	servers []string
	conn    *zk.Conn // the session made before the kill
	calls   sync.WaitGroup
}

// channels: column 0 is the one connection made before the kill (it
// talks to one survivor at a time); column 1 opens a new session to each
// survivor, at most 20 at a time per survivor (the server allows 60
// connections per client address by default, and the background workers
// and the first column need some).
func (p *zkProber) channels(col int) (int, int) {
	if col == 0 {
		return 1, 1000
	}
	return len(p.servers), 20
}

// try creates an ephemeral sequential node of a fresh name, the lock
// recipe's create, in the session made before the kill (column 0) or in
// a new session to survivor ch (column 1).
func (p *zkProber) try(ctx context.Context, col, ch int, k uint64) error {
	conn := p.conn
	if col == 1 {
		c, err := zkConnect(ctx, []string{p.servers[ch]}, p.ttl, true)
		if err != nil {
			return err
		}
		defer c.Close()
		conn = c
	}
	return p.call(ctx, func() error {
		_, err := conn.CreateProtectedEphemeralSequential(fmt.Sprintf("%s/%d-lock-", p.dir, k), nil, zkACL)
		return err
	})
}

// call runs f, which cannot be cancelled, and returns when it does or
// when ctx ends; f itself returns at the latest when its connection is
// closed.
func (p *zkProber) call(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	p.calls.Add(1)
	go func() {
		defer p.calls.Done()
		done <- f()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close closes the session made before the kill, which deletes its nodes,
// and waits for the calls still under way.
func (p *zkProber) close() {
	p.conn.Close()
	p.calls.Wait()
}

func (z *zookeeper) Waiters(context.Context, string) (int, error) {
	return 0, scaleRowsUnsupported(ZooKeeper)
}

func (z *zookeeper) Watch(context.Context, int, string, uint64, time.Duration, func()) (uint64, error) {
	return 0, scaleRowsUnsupported(ZooKeeper)
}
