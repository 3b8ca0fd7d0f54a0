package etcdapi

import (
	"bytes"
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"

	"github.com/lockd/lockd/fsm"
)

// electionServer is etcd's Election service (recipes.go), with
// concurrency.Election's semantics: the leader of name is the key under
// name/ with the lowest create revision, its value the leader's
// proclamation.
type electionServer struct {
	v3electionpb.UnimplementedElectionServer
	s *Server
}

// Campaign waits until the call's lease leads the election, as
// concurrency.Election.Campaign does: a lease already campaigning keeps
// its place and proclaims the new value.
func (e electionServer) Campaign(ctx context.Context, r *v3electionpb.CampaignRequest) (*v3electionpb.CampaignResponse, error) {
	lease, err := e.s.leaseOrGrant(ctx, r.Lease)
	if err != nil {
		return nil, err
	}
	key := contenderKey(r.Name, lease)
	kv, hdr, err := e.s.enqueue(ctx, key, r.Value, lease)
	if err != nil {
		return nil, err
	}
	leader := &v3electionpb.LeaderKey{Name: r.Name, Key: key, Rev: kv.CreateRevision, Lease: lease}
	if !bytes.Equal(kv.Value, r.Value) {
		if hdr, err = e.proclaim(ctx, leader, r.Value); err != nil {
			return nil, grpcErr(err)
		}
	}
	if _, err := e.s.waitDeletes(ctx, prefixOf(r.Name), kv.CreateRevision-1); err != nil {
		if ctx.Err() != nil {
			e.s.deleteIfCreated(ctx, key, kv.CreateRevision)
		}
		return nil, grpcErr(err)
	}
	return &v3electionpb.CampaignResponse{Header: hdr, Leader: leader}, nil
}

// Proclaim sets the leader's value, if the key still leads with its
// create revision.
func (e electionServer) Proclaim(ctx context.Context, r *v3electionpb.ProclaimRequest) (*v3electionpb.ProclaimResponse, error) {
	if r.Leader == nil {
		return nil, grpcErr(errMissingLeaderKey)
	}
	hdr, err := e.proclaim(ctx, r.Leader, r.Value)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &v3electionpb.ProclaimResponse{Header: hdr}, nil
}

func (e electionServer) proclaim(ctx context.Context, l *v3electionpb.LeaderKey, value []byte) (*pb.ResponseHeader, error) {
	resp, err := kvServer{e.s}.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{createRevisionIs(l.Key, l.Rev)},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: l.Key, Value: value, Lease: l.Lease}}}},
	})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, errElectionNotLeader
	}
	return resp.Header, nil
}

// Resign deletes the leader's key if it still has its create revision;
// as in etcd, a key already gone is no error.
func (e electionServer) Resign(ctx context.Context, r *v3electionpb.ResignRequest) (*v3electionpb.ResignResponse, error) {
	if r.Leader == nil {
		return nil, grpcErr(errMissingLeaderKey)
	}
	resp, err := kvServer{e.s}.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{createRevisionIs(r.Leader.Key, r.Leader.Rev)},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: r.Leader.Key}}}},
	})
	if err != nil {
		return nil, err
	}
	return &v3electionpb.ResignResponse{Header: resp.Header}, nil
}

// Leader answers the current leader's key and value, read linearizably.
func (e electionServer) Leader(ctx context.Context, r *v3electionpb.LeaderRequest) (*v3electionpb.LeaderResponse, error) {
	kv, hdr, err := e.s.firstCreated(ctx, prefixOf(r.Name))
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, grpcErr(errElectionNoLeader)
	}
	return &v3electionpb.LeaderResponse{Header: hdr, Kv: kv}, nil
}

// Observe streams the leader as concurrency.Election.Observe does: the
// leader when the call starts (or, with none, the first key put under
// name/ after it), then each put of the leader's key, and after its
// delete the next leader, from the node's own history of changes.
func (e electionServer) Observe(r *v3electionpb.LeaderRequest, stream v3electionpb.Election_ObserveServer) error {
	ctx := stream.Context()
	prefix := prefixOf(r.Name)
	for {
		kv, hdr, err := e.s.firstCreated(ctx, prefix)
		if err != nil {
			return err
		}
		after := uint64(hdr.Revision) //nolint:gosec // G115: a revision from a header, positive
		if kv == nil {
			ev, err := e.s.nextEvent(ctx, prefix, fsm.PrefixEnd(prefix), after, true)
			if err != nil {
				return grpcErr(err)
			}
			kv, after = keyValue(ev.KV), ev.Index
		}
		if err := stream.Send(&v3electionpb.LeaderResponse{Header: e.s.header(after), Kv: kv}); err != nil {
			return err
		}
		for {
			ev, err := e.s.nextEvent(ctx, kv.Key, nil, after, false)
			if err != nil {
				return grpcErr(err)
			}
			after = ev.Index
			if ev.Type == fsm.EventDelete {
				break
			}
			if err := stream.Send(&v3electionpb.LeaderResponse{Header: e.s.header(after), Kv: keyValue(ev.KV)}); err != nil {
				return err
			}
		}
	}
}

// nextEvent waits for the first event after revision after on [key, end)
// in the node's own history (only a put if putsOnly) and returns it.
func (s *Server) nextEvent(ctx context.Context, key, end []byte, after uint64, putsOnly bool) (fsm.Event, error) {
	f := s.b.FSM()
	topic := topicOf(key, end)
	for {
		changed, stop := f.Watch(topic)
		page, err := f.Events(after, key, end, watchPage)
		if err != nil {
			stop()
			return fsm.Event{}, err
		}
		for _, ev := range page.Events {
			if !putsOnly || ev.Type == fsm.EventPut {
				stop()
				return ev, nil
			}
		}
		after = page.Next
		if page.More {
			stop()
			continue
		}
		select {
		case <-changed:
			stop()
		case <-ctx.Done():
			stop()
			return fsm.Event{}, ctx.Err()
		}
	}
}
