package compare

import (
	"context"
	"fmt"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/lockd/lockd/bench/load"
)

// keepAliveStreams are the keepalive-batch rows' lease KeepAlive streams
// on etcd: one per caller, opened at its first batch and kept, as an etcd
// client keeps one stream for all its leases.
type keepAliveStreams struct {
	mu      sync.Mutex
	streams map[int]*keepAliveStream
}

type keepAliveStream struct {
	s      pb.Lease_LeaseKeepAliveClient
	cancel context.CancelFunc
}

// KeepAliveMany renews ss over caller i's KeepAlive stream: one request per
// lease sent back to back, then their answers read (the server answers a
// stream's requests in order). A lease the answer gives no TTL is gone.
// This is the etcd side of the keepalive-batch rows, with lockd's one
// request for several sessions on the other.
func (e *etcd) KeepAliveMany(ctx context.Context, i int, ss []load.Session) ([]error, error) {
	st, err := e.keepAliveStream(i)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		if err := st.s.Send(&pb.LeaseKeepAliveRequest{ID: int64(s.(*etcdSession).lease)}); err != nil {
			e.dropStream(i)
			return nil, err
		}
	}
	errs := make([]error, len(ss))
	for k, s := range ss {
		resp, err := st.s.Recv()
		if err != nil {
			e.dropStream(i)
			return nil, err
		}
		if want := int64(s.(*etcdSession).lease); resp.ID != want {
			e.dropStream(i)
			return nil, fmt.Errorf("etcd KeepAlive stream answered lease %x, want %x", resp.ID, want)
		}
		if resp.TTL <= 0 {
			errs[k] = fmt.Errorf("%w: lease %x not found", load.ErrSessionExpired, resp.ID)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return errs, nil
}

func (e *etcd) keepAliveStream(i int) (*keepAliveStream, error) {
	e.streams.mu.Lock()
	defer e.streams.mu.Unlock()
	if st := e.streams.streams[i]; st != nil {
		return st, nil
	}
	c := e.clients[i%len(e.clients)]
	ctx, cancel := context.WithCancel(context.Background())
	s, err := pb.NewLeaseClient(c.ActiveConnection()).LeaseKeepAlive(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if e.streams.streams == nil {
		e.streams.streams = map[int]*keepAliveStream{}
	}
	st := &keepAliveStream{s: s, cancel: cancel}
	e.streams.streams[i] = st
	return st, nil
}

func (e *etcd) dropStream(i int) {
	e.streams.mu.Lock()
	defer e.streams.mu.Unlock()
	if st := e.streams.streams[i]; st != nil {
		st.cancel()
		delete(e.streams.streams, i)
	}
}

// closeStreams ends every KeepAlive stream.
func (e *etcd) closeStreams() {
	e.streams.mu.Lock()
	defer e.streams.mu.Unlock()
	for i, st := range e.streams.streams {
		st.cancel()
		delete(e.streams.streams, i)
	}

}
