package etcdapi

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// clusterServer is etcd's Cluster service: MemberList only. Membership
// changes go through lockd's own API (docs/operations.md).
type clusterServer struct {
	pb.UnimplementedClusterServer
	s *Server
}

// MemberList lists the members of the Raft configuration as this node
// knows them: its ID (a hash of the lockd member id, as in every header),
// its name (the lockd id), its peer URL, its etcd URL as the member table
// records it (none for a member that serves no etcd API, or has not
// registered it yet), and non-voters as learners. It is answered from
// the node's own state, whether or not linearizable is asked.
func (c *clusterServer) MemberList(ctx context.Context, _ *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if _, _, err := c.s.authorize(callOf(ctx)); err != nil {
		return nil, err
	}
	cl, err := c.s.b.Cluster(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	out := &pb.MemberListResponse{Header: c.s.header(c.s.b.FSM().AppliedIndex())}
	for _, m := range cl.Members {
		pm := &pb.Member{ID: hash64(m.ID), Name: m.ID, PeerURLs: []string{c.s.peerScheme + m.Peer}, IsLearner: !m.Voter}
		if m.Etcd != "" {
			pm.ClientURLs = []string{m.Etcd}
		}
		out.Members = append(out.Members, pm)
	}
	return out, nil
}
