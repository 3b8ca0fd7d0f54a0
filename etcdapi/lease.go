package etcdapi

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// Leases are sessions. Lease ID N (positive) is the session named
// leasePrefix followed by N in 16 lower-case hexadecimal digits: the
// mapping is a computation, the same on every node, with no table to
// replicate or rebuild, and session ids sort as their lease IDs do (a
// compare on a key's lease is a compare on its session). A session whose
// id has another form (one created over the HTTP API) has no lease ID:
// etcd's clients see its keys with lease 0.
const leasePrefix = "etcd-"

// sessionOf returns the session id of lease id.
func sessionOf(id int64) string { return fmt.Sprintf("%s%016x", leasePrefix, id) }

// leaseOf returns the lease ID of session id, 0 if it is not a lease's.
func leaseOf(session string) int64 {
	h, ok := strings.CutPrefix(session, leasePrefix)
	if !ok || len(h) != 16 {
		return 0
	}
	n, err := strconv.ParseUint(h, 16, 63)
	if err != nil {
		return 0
	}
	return int64(n)
}

// newLeaseID picks a random positive lease ID.
func newLeaseID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if n := int64(binary.BigEndian.Uint64(b[:]) >> 1); n != 0 {
		return n
	}
	return 1
}

// seconds rounds d down to whole seconds, as etcd counts a lease's TTL.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// leaseServer is etcd's Lease service.
type leaseServer struct{ s *Server }

func (l leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	return invoke(ctx, l.s, mGrant, r, true, l.s.grantLocal)
}

func (l leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	return invoke(ctx, l.s, mRevoke, r, true, l.s.revokeLocal)
}

func (l leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	return invoke(ctx, l.s, mTTL, r, true, l.s.timeToLiveLocal)
}

func (l leaseServer) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	return invoke(ctx, l.s, mLeases, r, true, l.s.leasesLocal)
}

// LeaseKeepAlive renews leases as they are asked for, each renewal a
// keepalive of the session on the leader (forwarded from a follower):
// never a Raft entry. A lease that does not exist is answered with TTL 0,
// as etcd answers; any other failure (no leader) ends the stream, which
// etcd's clients open again.
func (l leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	ctx := stream.Context()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := invoke(ctx, l.s, mKeepAlive, req, true, l.s.keepAliveLocal)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func (s *Server) grantLocal(ctx context.Context, c *call, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	tok, on, err := s.authorize(c)
	if err != nil {
		return nil, err
	}
	if on && !acl.CanWriteSomething(tok) {
		return nil, rpctypes.ErrGRPCPermissionDenied
	}
	if r.ID < 0 {
		return nil, rpctypes.ErrGRPCLeaseNotFound
	}
	ttl := time.Duration(r.TTL) * time.Second
	switch {
	case r.TTL > int64(api.MaxTTL/time.Second):
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	case ttl < api.MinTTL:
		ttl = api.MinTTL // as etcd, which raises a short TTL to its minimum
	}
	req := api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: new(api.Duration), Name: "etcd lease"}
	if on {
		req.Owner = tok.AccessorID
	}
	id := r.ID
	for try := 0; ; try++ {
		if r.ID == 0 {
			id = newLeaseID()
		}
		sess, err := s.b.CreateSessionWithID(ctx, sessionOf(id), req)
		if errors.Is(err, fsm.ErrSessionExists) && r.ID == 0 && try < 3 {
			continue // a random ID in use: pick another
		}
		if err != nil {
			return nil, err
		}
		return &pb.LeaseGrantResponse{Header: s.header(sess.CreateIndex), ID: id, TTL: seconds(ttl)}, nil
	}
}

func (s *Server) revokeLocal(ctx context.Context, c *call, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	id := sessionOf(r.ID)
	if err := s.ownSession(c, id); err != nil {
		return nil, err
	}
	if err := s.b.DestroySession(ctx, id); err != nil {
		return nil, err
	}
	return &pb.LeaseRevokeResponse{Header: s.header(s.b.FSM().AppliedIndex())}, nil
}

func (s *Server) keepAliveLocal(ctx context.Context, c *call, r *pb.LeaseKeepAliveRequest) (*pb.LeaseKeepAliveResponse, error) {
	id := sessionOf(r.ID)
	if err := s.ownSession(c, id); err != nil {
		return nil, err
	}
	out := &pb.LeaseKeepAliveResponse{ID: r.ID}
	k, err := s.b.KeepAlive(ctx, id)
	switch {
	case api.CodeOf(err) == api.CodeSessionExpired:
		// TTL 0: the lease is gone.
	case err != nil:
		return nil, err
	default:
		out.TTL = seconds(k.TTL.D())
	}
	out.Header = s.header(s.b.FSM().AppliedIndex())
	return out, nil
}

func (s *Server) timeToLiveLocal(ctx context.Context, c *call, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	id := sessionOf(r.ID)
	if err := s.ownSession(c, id); err != nil {
		return nil, err
	}
	sess, err := s.b.Session(ctx, id, api.ReadOptions{})
	if api.CodeOf(err) == api.CodeSessionExpired {
		return &pb.LeaseTimeToLiveResponse{Header: s.header(s.b.FSM().AppliedIndex()), ID: r.ID, TTL: -1}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &pb.LeaseTimeToLiveResponse{Header: s.header(sess.Index), ID: r.ID, GrantedTTL: seconds(sess.TTL.D())}
	if sess.TTLRemaining != nil {
		out.TTL = seconds(sess.TTLRemaining.D())
	}
	if r.Keys {
		out.Keys = s.b.FSM().KeysOf(id)
	}
	return out, nil
}

func (s *Server) leasesLocal(ctx context.Context, c *call, _ *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	tok, on, err := s.authorize(c)
	if err != nil {
		return nil, err
	}
	var sessions []fsm.Session
	var applied uint64
	if err := s.b.ReadNamespace(ctx, false, func() {
		applied, sessions = s.b.FSM().AppliedIndex(), s.b.FSM().AllSessions()
	}); err != nil {
		return nil, err
	}
	out := &pb.LeaseLeasesResponse{Header: s.header(applied)}
	for _, sess := range sessions {
		id := leaseOf(sess.ID)
		if id == 0 || on && !acl.Owns(tok, sess.Owner) {
			continue
		}
		out.Leases = append(out.Leases, &pb.LeaseStatus{ID: id})
	}
	return out, nil
}

// authServer serves Authenticate only: a lockd token's secret as the
// password (any name) answers with that secret as the token, which etcd's
// clients then send on every call.
type authServer struct {
	pb.UnimplementedAuthServer
	s *Server
}

func (a *authServer) Authenticate(_ context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if !a.s.acl {
		return nil, rpctypes.ErrGRPCAuthNotEnabled
	}
	if _, ok := a.s.b.ResolveToken(r.Password); !ok || r.Password == "" {
		return nil, rpctypes.ErrGRPCAuthFailed
	}
	return &pb.AuthenticateResponse{Header: a.s.header(a.s.b.FSM().AppliedIndex()), Token: r.Password}, nil
}
