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

	"github.com/lockd/lockd/internal/load"
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
}

func newZooKeeper(servers []string) (*zookeeper, error) {
	if len(servers) == 0 {
		return nil, errors.New("zookeeper: no servers")
	}
	return &zookeeper{servers: servers, made: map[string]bool{}}, nil
}

func (z *zookeeper) Close() error { return nil }

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
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return false, err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if mode, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(mode) == "leader", nil
		}
	}
	return false, fmt.Errorf("zookeeper %s: no mode in its srvr answer %.100q", server, b)
}

// NotApplicable: ZooKeeper has no counterpart of the keepalive rows.
func (z *zookeeper) NotApplicable(bench string) string {
	if bench == "keepalive" {
		return ZooKeeperKeepalive
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
		s.conn.Delete(node, -1)
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
		<-done
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
