package etcdapi

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/api/v3/version"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/api"
)

// maintenanceServer serves Status and Alarm's list, from the node's own
// state, as etcd does (enough for etcdctl endpoint status and health).
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s *Server
}

// Status describes the node that answers: the version of etcd's API
// types lockd is built with (not lockd's version), the leader's member
// ID, the node's applied index as both Raft indexes, and the bytes of
// its keys and values as the database size, and the node's Raft term.
// With no leader known, Errors says so.
func (m *maintenanceServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	if _, _, err := m.s.authorize(callOf(ctx)); err != nil {
		return nil, err
	}
	f := m.s.b.FSM()
	applied := f.AppliedIndex()
	out := &pb.StatusResponse{Header: m.s.header(applied), Version: version.Version, RaftIndex: applied, RaftAppliedIndex: applied}
	out.DbSize = int64(f.KVCounts().Bytes)
	if cl, err := m.s.b.Cluster(ctx); err == nil {
		out.RaftTerm = cl.Term
	}
	out.DbSizeInUse = out.DbSize
	switch isLeader, to := m.s.b.Leader(); {
	case isLeader:
		out.Leader = m.s.member
	case to.ID != "":
		out.Leader = hash64(to.ID)
	default:
		out.Errors = []string{"no leader is known to this node"}
	}
	return out, nil
}

// Alarm answers GET with the alarms of the cluster's members as this node
// knows them: its own NOSPACE while writes to its data dir fail for want
// of space (lockd refuses writes then, as etcd does under that alarm);
// lockd does not learn the other members' disks. Raising or clearing an
// alarm is lockd's own business (the disk's state decides it), so
// ACTIVATE and DEACTIVATE are refused. etcdctl's endpoint health asks
// for the list.
func (m *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if _, _, err := m.s.authorize(callOf(ctx)); err != nil {
		return nil, err
	}
	if r.Action != pb.AlarmRequest_GET {
		return nil, status.Errorf(codes.Unimplemented, "lockd raises and clears its alarms itself (%v refused): a node's NOSPACE ends when writes to its data dir succeed again", r.Action)
	}
	c, err := m.s.b.Cluster(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	out := &pb.AlarmResponse{Header: m.s.header(m.s.b.FSM().AppliedIndex())}
	if c.StorageProblem != nil && c.StorageProblem.Reason == api.CodeStorageFull {
		out.Alarms = append(out.Alarms, &pb.AlarmMember{MemberID: m.s.member, Alarm: pb.AlarmType_NOSPACE})
	}
	return out, nil
}

// MoveLeader hands leadership to the member whose ID (a hash of its
// lockd id, as MemberList gives it) the request names, as lockd's
// POST /v1/cluster/leader-transfer does: the leader gives its master lease
// up first. Any node takes the call and forwards it to the leader. With
// ACLs, admin tokens only.
func (m *maintenanceServer) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	return invoke(ctx, m.s, mMove, r, true, m.s.moveLeaderLocal)
}

func (s *Server) moveLeaderLocal(ctx context.Context, c *call, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	tok, on, err := s.authorize(c)
	if err != nil {
		return nil, err
	}
	if on && !tok.Admin {
		return nil, rpctypes.ErrGRPCPermissionDenied
	}
	cl, err := s.b.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	to := ""
	for _, mb := range cl.Members {
		if hash64(mb.ID) == r.TargetID {
			to = mb.ID
		}
	}
	if to == "" {
		return nil, rpctypes.ErrGRPCBadLeaderTransferee
	}
	if _, err := s.b.TransferLeadership(ctx, to); err != nil {
		return nil, err
	}
	return &pb.MoveLeaderResponse{Header: s.header(s.b.FSM().AppliedIndex())}, nil
}
