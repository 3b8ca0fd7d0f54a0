package etcdapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/lockd/lockd/fsm"
)

// The Lock and Election services are served as etcd serves them: by the
// recipes of etcd's client (concurrency.Mutex, concurrency.Election) run
// on the node against its own KV service, with the caller's context, so
// that its token, its deadline and the forwarding of writes to the
// leader apply to every step. A name locked through the Lock service is
// the same keys as concurrency.Mutex on that name: each contender puts
// NAME/LEASE (the lease in hex) under its lease, and holds the lock once
// no key under NAME/ has a lower create revision. That revision is the
// holder's fencing token: a transaction that compares the key's create
// revision with it is applied only while the lock is held (docs/etcd.md).
//
// The waits differ from the client's in where they wait, not in what they
// wait for: a contender waits on the node's own state for the key ahead
// of it to be deleted (fsm.Watch), instead of a watch stream, after a
// linearizable read named that key and the revision it was read at.

// Errors of the recipes, with etcd's words: its Lock and Election
// services return its concurrency package's errors, which reach clients
// as gRPC code Unknown with this text.
var (
	errSessionExpired    = errors.New("mutex: session is expired")
	errElectionNotLeader = errors.New("election: not leader")
	errElectionNoLeader  = errors.New("election: no leader")
	errMissingLeaderKey  = errors.New(`"leader" field must be provided`)
)

// defaultRecipeTTL is the TTL of the lease a Lock or Campaign call
// without one is given, as etcd's concurrency.NewSession gives (and, as
// there, nothing renews it).
const defaultRecipeTTL = 60

// cleanupTimeout bounds the delete of a contender's key after its call
// ended before it was granted.
const cleanupTimeout = 5 * time.Second

// contenderKey is the key a contender under lease puts for name.
func contenderKey(name []byte, lease int64) []byte {
	return fmt.Appendf(nil, "%s/%x", name, lease)
}

// prefixOf is the prefix every contender's key for name starts with.
func prefixOf(name []byte) []byte {
	return append(bytes.Clone(name), '/')
}

// leaseOrGrant returns lease, or a new lease of the default TTL if it is
// 0, as the recipes do.
func (s *Server) leaseOrGrant(ctx context.Context, lease int64) (int64, error) {
	if lease != 0 {
		return lease, nil
	}
	resp, err := leaseServer{s}.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: defaultRecipeTTL})
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// enqueue puts key with value under lease unless it exists, and returns
// its record (the new one, or the one that was there) and the header of
// the transaction.
func (s *Server) enqueue(ctx context.Context, key, value []byte, lease int64) (*mvccpb.KeyValue, *pb.ResponseHeader, error) {
	resp, err := kvServer{s}.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{createRevisionIs(key, 0)},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: value, Lease: lease}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: key}}}},
	})
	if err != nil {
		return nil, nil, err
	}
	if resp.Succeeded {
		rev := resp.Header.Revision
		return &mvccpb.KeyValue{Key: key, Value: value, CreateRevision: rev, ModRevision: rev, Version: 1, Lease: lease}, resp.Header, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 { // deleted between the compare and the read: cannot be, they are one entry
		return nil, nil, fmt.Errorf("etcdapi: key %q neither absent nor present", key)
	}
	return kvs[0], resp.Header, nil
}

// createRevisionIs compares key's create revision with rev.
func createRevisionIs(key []byte, rev int64) *pb.Compare {
	return &pb.Compare{Key: key, Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: rev}}
}

// waitDeletes waits until no key under prefix has a create revision of
// maxRev or less, and returns the header of the read that found none.
func (s *Server) waitDeletes(ctx context.Context, prefix []byte, maxRev int64) (*pb.ResponseHeader, error) {
	for {
		resp, err := kvServer{s}.Range(ctx, &pb.RangeRequest{
			Key: prefix, RangeEnd: fsm.PrefixEnd(prefix), MaxCreateRevision: maxRev,
			SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_CREATE, Limit: 1,
		})
		if err != nil {
			return nil, err
		}
		if len(resp.Kvs) == 0 {
			return resp.Header, nil
		}
		if err := s.waitGone(ctx, resp.Kvs[0], resp.Header.Revision); err != nil {
			return nil, err
		}
	}
}

// goneCheck is how often waitGone looks again without a change of its
// key, for a node that had not yet applied the revision it waits from.
const goneCheck = 500 * time.Millisecond

// waitGone waits until the node's own state, at revision rev or later,
// no longer holds kv (the key with kv's create revision).
func (s *Server) waitGone(ctx context.Context, kv *mvccpb.KeyValue, rev int64) error {
	f := s.b.FSM()
	t := time.NewTicker(goneCheck)
	defer t.Stop()
	for {
		changed, stop := f.Watch(fsm.KeyTopic(kv.Key))
		if f.AppliedIndex() >= uint64(rev) { //nolint:gosec // G115: a revision from a header, positive
			cur, ok := f.Get(kv.Key)
			if !ok || revision(cur.CreateIndex) != kv.CreateRevision {
				stop()
				return nil
			}
		}
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			stop()
			return ctx.Err()
		}
		stop()
	}
}

// deleteIfCreated deletes key if its create revision is rev, after the
// call that put it ended without a grant; the caller's context may be
// done, so it keeps only its values (the token).
func (s *Server) deleteIfCreated(ctx context.Context, key []byte, rev int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := kvServer{s}.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{createRevisionIs(key, rev)},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: key}}}},
	})
	if err != nil {
		s.log.Warn("could not delete a contender's key after its call ended", "key", string(key), "err", err)
	}
}

// firstCreated reads, linearizably, the key under prefix with the lowest
// create revision: the holder or leader. kv is nil if there is none.
func (s *Server) firstCreated(ctx context.Context, prefix []byte) (*mvccpb.KeyValue, *pb.ResponseHeader, error) {
	resp, err := kvServer{s}.Range(ctx, &pb.RangeRequest{
		Key: prefix, RangeEnd: fsm.PrefixEnd(prefix),
		SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_CREATE, Limit: 1,
	})
	if err != nil {
		return nil, nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header, nil
	}
	return resp.Kvs[0], resp.Header, nil
}
