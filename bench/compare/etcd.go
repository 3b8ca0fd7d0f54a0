package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/lockd/lockd/bench/load"
)

// etcd is the System of an etcd cluster, through etcd's own Go client:
// one client (one gRPC connection) per endpoint, session i on endpoint i
// mod n, as lockd's rows spread their workers.
//
// A session is a lease. Its locks are concurrency.Mutex values on a
// concurrency.Session built on that lease at its first lock request (the
// Session then renews the lease in the background, every TTL/3, as every
// etcd user's session does). A keepalive is one KeepAliveOnce; the
// keepalive rows' sessions never take a lock, so nothing else renews them.
type etcd struct {
	name      string // Etcd, or LockdEtcd: lockd's nodes serving etcd's API
	endpoints []string
	clients   []*clientv3.Client
	watches   etcdWatches      // the kv-watch rows' open watches (etcd_kv.go)
	streams   keepAliveStreams // the keepalive-batch rows' streams (etcd_stream.go)
}

func newEtcd(endpoints []string) (*etcd, error) {
	e := &etcd{endpoints: endpoints}
	for _, ep := range endpoints {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{ep},
			DialTimeout: 5 * time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			_ = e.Close()
			return nil, fmt.Errorf("etcd client for %s: %w", ep, err)
		}
		e.clients = append(e.clients, c)
	}
	if len(e.clients) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	return e, nil
}

func (e *etcd) Close() error {
	e.watches.closeAll()
	e.closeStreams()
	var first error
	for _, c := range e.clients {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (e *etcd) NewSession(ctx context.Context, i int, ttl time.Duration) (load.Session, error) {
	c := e.clients[i%len(e.clients)]
	secs := int64((ttl + time.Second - 1) / time.Second)
	resp, err := c.Grant(ctx, secs)
	// etcd refuses proposals while its apply lags its commit by more than
	// 5,000 entries ("too many requests"), as it does when 100,000 leases
	// are granted as fast as the callers can; a client is meant to back
	// off and retry, and so does this one.
	for backoff := 10 * time.Millisecond; errors.Is(err, rpctypes.ErrTooManyRequests); backoff = min(2*backoff, 500*time.Millisecond) {
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		resp, err = c.Grant(ctx, secs)
	}
	if err != nil {
		return nil, err
	}
	return &etcdSession{client: c, lease: resp.ID, ttl: int(secs), mutexes: map[string]*concurrency.Mutex{}}, nil
}

// Writes returns the leader's Raft index, as its Status reports it.
func (e *etcd) Writes(ctx context.Context) (uint64, error) {
	var first error
	for i, c := range e.clients {
		st, err := c.Status(ctx, e.endpoints[i])
		if err != nil {
			first = cmp(first, err)
			continue
		}
		if st.Header != nil && st.Leader == st.Header.MemberId {
			return st.RaftIndex, nil
		}
	}
	return 0, cmp(first, fmt.Errorf("etcd: no endpoint of %v is the leader", e.endpoints))
}

// etcdLeads says whether the member at endpoint leads.
func etcdLeads(ctx context.Context, endpoint string) (bool, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	st, err := c.Status(ctx, endpoint)
	if err != nil {
		return false, err
	}
	return st.Header != nil && st.Leader == st.Header.MemberId, nil
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// notEtcdAPI is why a system other than etcd and lockd-etcd has no
// etcd-API rows.
const notEtcdAPI = "the etcd-API rows measure etcd's v3 API: etcd and lockd-etcd only"

// NotApplicable: lockd-etcd runs only the etcd-API rows (lockd's own
// rows are the lockd system's, over its HTTP API).
func (e *etcd) NotApplicable(bench string) string {
	if e.name == LockdEtcd && bench != EtcdAPIBench {
		return "lockd-etcd runs only the etcd-API rows; lockd's other rows are the lockd system's, over its HTTP API"
	}
	return ""
}

type etcdSession struct {
	client  *clientv3.Client
	lease   clientv3.LeaseID
	ttl     int
	session *concurrency.Session // at the first lock request
	mutexes map[string]*concurrency.Mutex
}

func (s *etcdSession) ID() string { return fmt.Sprintf("%x", int64(s.lease)) }

func (s *etcdSession) KeepAlive(ctx context.Context) error {
	_, err := s.client.KeepAliveOnce(ctx, s.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%w: %w", load.ErrSessionExpired, err)
	}
	return err
}

func (s *etcdSession) mutex(name string) (*concurrency.Mutex, error) {
	if m := s.mutexes[name]; m != nil {
		return m, nil
	}
	if s.session == nil {
		cs, err := concurrency.NewSession(s.client, concurrency.WithLease(s.lease), concurrency.WithTTL(s.ttl))
		if err != nil {
			return nil, err
		}
		s.session = cs
	}
	m := concurrency.NewMutex(s.session, name)
	s.mutexes[name] = m
	return m, nil
}

// TryAcquire is Mutex.TryLock: one transaction (put our key if absent,
// read the first key under the lock's prefix).
func (s *etcdSession) TryAcquire(ctx context.Context, name string) error {
	m, err := s.mutex(name)
	if err != nil {
		return err
	}
	return etcdErr(m.TryLock(ctx))
}

// Acquire is Mutex.Lock: the same transaction, then a watch for the
// deletion of the key before ours, then a read of our own key.
func (s *etcdSession) Acquire(ctx context.Context, name string, wait time.Duration) error {
	m, err := s.mutex(name)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = m.Lock(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return fmt.Errorf("%w: %w", load.ErrLockHeld, err)
	}
	return etcdErr(err)
}

func etcdErr(err error) error {
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		return fmt.Errorf("%w: %w", load.ErrLockHeld, err)
	case errors.Is(err, concurrency.ErrSessionExpired):
		return fmt.Errorf("%w: %w", load.ErrSessionExpired, err)
	}
	return err
}

// Release is Mutex.Unlock: a delete of our key.
func (s *etcdSession) Release(ctx context.Context, name string) error {
	m := s.mutexes[name]
	if m == nil {
		return fmt.Errorf("etcd: release of %s, which this session never took", name)
	}
	return m.Unlock(ctx)
}

// Destroy revokes the lease, which deletes every key on it.
func (s *etcdSession) Destroy(ctx context.Context) error {
	if s.session != nil {
		s.session.Orphan() // stop its background renewals
	}
	_, err := s.client.Revoke(ctx, s.lease)
	return err
}

// etcdPeer is an etcd cluster during failover trials.
type etcdPeer struct {
	endpoints []string
	ttl       time.Duration
}

func newEtcdClient(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// whole asks every member for its Status (on a fresh client: a client of
// a member that was down may wait out gRPC's reconnect backoff) and
// wants each to name the same leader.
func (e *etcdPeer) whole(ctx context.Context) error {
	var leader uint64
	for _, ep := range e.endpoints {
		c, err := newEtcdClient(ep)
		if err != nil {
			return err
		}
		st, err := c.Status(ctx, ep)
		_ = c.Close()
		switch {
		case err != nil:
			return fmt.Errorf("etcd %s: %w", ep, err)
		case st.Leader == 0:
			return fmt.Errorf("etcd %s knows no leader", ep)
		case leader != 0 && st.Leader != leader:
			return fmt.Errorf("etcd members name leaders %x and %x", leader, st.Leader)
		}
		leader = st.Leader
	}
	return nil
}

// prepare grants a lease through the first survivor and builds a
// concurrency.Session on it on a client of each survivor, so that every
// survivor can be tried with the one session.
func (e *etcdPeer) prepare(ctx context.Context, survivors []int, prefix string) (prober, error) {
	p := &etcdProber{prefix: prefix}
	for _, i := range survivors {
		c, err := newEtcdClient(e.endpoints[i])
		if err != nil {
			p.close()
			return nil, err
		}
		p.clients = append(p.clients, c)
	}
	resp, err := p.clients[0].Grant(ctx, int64(e.ttl/time.Second))
	if err != nil {
		p.close()
		return nil, err
	}
	p.lease = resp.ID
	for _, c := range p.clients {
		s, err := concurrency.NewSession(c, concurrency.WithLease(resp.ID))
		if err != nil {
			p.close()
			return nil, err
		}
		p.sessions = append(p.sessions, s)
	}
	return p, nil
}

type etcdProber struct {
	prefix   string
	clients  []*clientv3.Client
	lease    clientv3.LeaseID
	sessions []*concurrency.Session
}

// channels: one per survivor for the session made before the kill; no
// second column.
func (p *etcdProber) channels(col int) (int, int) {
	if col == 0 {
		return len(p.sessions), 1000
	}
	return 0, 0
}

// try is Mutex.TryLock on a fresh key through survivor ch.
func (p *etcdProber) try(ctx context.Context, _, ch int, k uint64) error {
	return concurrency.NewMutex(p.sessions[ch], fmt.Sprintf("%s/%d", p.prefix, k)).TryLock(ctx)
}

// close stops the sessions' renewals and revokes the lease, which deletes
// the keys the tries took.
func (p *etcdProber) close() {
	for _, s := range p.sessions {
		s.Orphan()
	}
	if p.lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), tryLimit)
		_, _ = p.clients[0].Revoke(ctx, p.lease) // best effort: the lease expires anyway
		cancel()
	}
	for _, c := range p.clients {
		_ = c.Close()
	}
}

func (e *etcd) Waiters(context.Context, string) (int, error) {
	return 0, scaleRowsUnsupported(Etcd)
}

func (e *etcd) Watch(context.Context, int, string, uint64, time.Duration, func()) (uint64, error) {
	return 0, scaleRowsUnsupported(Etcd)
}
