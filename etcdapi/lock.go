package etcdapi

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
)

// lockServer is etcd's Lock service (recipes.go).
type lockServer struct {
	v3lockpb.UnimplementedLockServer
	s *Server
}

// Lock waits until the call's lease holds the lock name, as
// concurrency.Mutex.Lock does, and answers with the key that holds it. A
// call without a lease is given one of 60 s that nothing renews, as in
// etcd. A call that ends before the grant deletes its key.
func (l lockServer) Lock(ctx context.Context, r *v3lockpb.LockRequest) (*v3lockpb.LockResponse, error) {
	lease, err := l.s.leaseOrGrant(ctx, r.Lease)
	if err != nil {
		return nil, err
	}
	key := contenderKey(r.Name, lease)
	kv, _, err := l.s.enqueue(ctx, key, nil, lease)
	if err != nil {
		return nil, err
	}
	if _, err := l.s.waitDeletes(ctx, prefixOf(r.Name), kv.CreateRevision-1); err != nil {
		l.s.deleteIfCreated(ctx, key, kv.CreateRevision)
		return nil, grpcErr(err)
	}
	// The key may have gone with its lease while the call waited.
	resp, err := kvServer{l.s}.Range(ctx, &pb.RangeRequest{Key: key})
	if err != nil {
		l.s.deleteIfCreated(ctx, key, kv.CreateRevision)
		return nil, err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != kv.CreateRevision {
		return nil, grpcErr(errSessionExpired)
	}
	return &v3lockpb.LockResponse{Header: resp.Header, Key: key}, nil
}

// Unlock deletes the key Lock answered.
func (l lockServer) Unlock(ctx context.Context, r *v3lockpb.UnlockRequest) (*v3lockpb.UnlockResponse, error) {
	resp, err := kvServer{l.s}.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: r.Key})
	if err != nil {
		return nil, err
	}
	return &v3lockpb.UnlockResponse{Header: resp.Header}, nil
}
