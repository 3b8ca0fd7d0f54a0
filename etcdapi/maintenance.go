package etcdapi

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/version"
)

// maintenanceServer serves Status only, from the node's own state, as
// etcd does (enough for etcdctl endpoint status and health checks).
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s *Server
}

// Status describes the node that answers: the version of etcd's API
// types lockd is built with (not lockd's version), the leader's member
// ID, the node's applied index as both Raft indexes, and the bytes of
// its keys and values as the database size. Raft's term is not given
// (0). With no leader known, Errors says so.
func (m *maintenanceServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	if _, _, err := m.s.authorize(callOf(ctx)); err != nil {
		return nil, err
	}
	f := m.s.b.FSM()
	applied := f.AppliedIndex()
	out := &pb.StatusResponse{Header: m.s.header(applied), Version: version.Version, RaftIndex: applied, RaftAppliedIndex: applied}
	out.DbSize = int64(f.KVCounts().Bytes)
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
