package etcdapi

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/internal/clientrate"
)

// Backend is what the etcd layer needs from a node; lease.Node implements
// it.
type Backend interface {
	// Leader reports whether this node serves leader requests itself,
	// and otherwise the leader to forward them to.
	Leader() (bool, api.LeaderAddr)
	// ID is the node's id.
	ID() string
	// FSM is the node's state, read inside ReadNamespace.
	FSM() *fsm.FSM
	// ReadNamespace runs fn as a read of the state (stale: from this
	// node's own; else under the leader's master lease).
	ReadNamespace(ctx context.Context, stale bool, fn func()) error
	// CommitTxn commits a transaction of byte keys on the leader, written
	// by the token whose accessor id is owner ("" without ACLs).
	CommitTxn(ctx context.Context, owner string, t *fsm.Txn, what string) (*fsm.TxnResult, uint64, error)

	CreateSessionWithID(ctx context.Context, id string, req api.CreateSessionRequest) (api.Session, error)
	KeepAlive(ctx context.Context, id string) (api.KeepAliveResponse, error)
	DestroySession(ctx context.Context, id string) error
	Session(ctx context.Context, id string, opt api.ReadOptions) (api.Session, error)

	// Cluster describes the cluster as this node knows it: its members
	// (with their etcd URLs), the Raft term and its own storage problem.
	Cluster(ctx context.Context) (api.Cluster, error)
	// TransferLeadership hands the leader's leadership to member to.
	TransferLeadership(ctx context.Context, to string) (api.TransferResponse, error)

	// ResolveToken and SessionOwner, for ACLs.
	ResolveToken(secret string) (acl.Token, bool)
	SessionOwner(id string) (owner string, exists bool)
}

// Config configures a Server.
type Config struct {
	Backend Backend
	// ACL turns ACLs on: every call needs a valid token.
	ACL bool
	// PeerTransport carries forwarded calls to the leader's peer port
	// (internal/peerhttp). Without it a follower answers what only the
	// leader may answer with etcd's "no leader".
	PeerTransport http.RoundTripper
	// RateLimit bounds the calls per second of each client address
	// (ratelimit.go); zero: none.
	RateLimit clientrate.Config
	// PeerTLS says the peer port speaks TLS (MemberList's peer URLs are
	// https://).
	PeerTLS bool
	// ForwardMargin bounds a forwarded call on top of the caller's own
	// deadline (and is the whole bound without one); 0 means 10 s.
	ForwardMargin time.Duration
	Logger        *slog.Logger
}

// Server is the etcd v3 API of one node.
type Server struct {
	b       Backend
	acl     bool
	peer    http.RoundTripper
	margin  time.Duration
	log     *slog.Logger
	member  uint64
	methods map[string]method
	// peerScheme starts the members' peer URLs.
	peerScheme string
	rate       *clientrate.Limiter // nil: no limit
}

// clusterID is the cluster_id of every header: lockd names no cluster by
// number, and clients only compare it between answers.
var clusterID = hash64("lockd")

// New returns the etcd API of cfg.Backend's node.
func New(cfg Config) *Server {
	s := &Server{b: cfg.Backend, acl: cfg.ACL, peer: cfg.PeerTransport, margin: cfg.ForwardMargin, log: cfg.Logger}
	if s.margin <= 0 {
		s.margin = 10 * time.Second
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "etcdapi")
	s.member = hash64(cfg.Backend.ID())
	s.rate = clientrate.New(cfg.RateLimit)
	s.peerScheme = "http://"
	if cfg.PeerTLS {
		s.peerScheme = "https://"
	}
	s.methods = s.methodTable()
	return s
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// GRPCServer returns a gRPC server with the etcd services registered; the
// caller adds its options (TLS credentials) and serves it. Every call
// lockd does not serve (Cluster but MemberList, Maintenance but Status
// and Alarm's list, and the Auth calls but Authenticate) is answered
// Unimplemented with a message that names it.
func (s *Server) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{
		// First in the chains: a handler that panics answers Internal
		// instead of ending the node's process, as a panic in an HTTP
		// handler ends only its connection.
		grpc.ChainUnaryInterceptor(s.recoverUnary),
		grpc.ChainStreamInterceptor(s.recoverStream),
		grpc.UnknownServiceHandler(unimplemented),
		// As etcd: clients may ping every 5 s, with or without a stream.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}, opts...)
	if s.rate != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(s.limitUnary), grpc.ChainStreamInterceptor(s.limitStream))
	}
	g := grpc.NewServer(opts...)
	pb.RegisterKVServer(g, kvServer{s})
	pb.RegisterLeaseServer(g, leaseServer{s})
	pb.RegisterWatchServer(g, watchServer{s})
	pb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
	pb.RegisterAuthServer(g, &authServer{s: s})
	pb.RegisterClusterServer(g, &clusterServer{s: s})
	v3lockpb.RegisterLockServer(g, lockServer{s: s})
	v3electionpb.RegisterElectionServer(g, electionServer{s: s})
	return g
}

// recoverUnary answers a unary call whose handler panicked with
// Internal, and logs the panic with its stack.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer s.recovered(info.FullMethod, &err)
	return h(ctx, req)
}

// recoverStream is recoverUnary for streams: the stream ends with
// Internal.
func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer s.recovered(info.FullMethod, &err)
	return h(srv, ss)
}

// recovered, deferred, turns a panic of the call method into err.
func (s *Server) recovered(method string, err *error) {
	p := recover()
	if p == nil {
		return
	}
	s.log.Error("etcd API call panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
	*err = status.Error(codes.Internal, "internal error")
}

func unimplemented(_ any, stream grpc.ServerStream) error {
	m, _ := grpc.MethodFromServerStream(stream)
	return status.Errorf(codes.Unimplemented, "lockd does not serve %s of etcd's v3 API yet (docs/etcd.md lists what it serves)", m)
}

// header is the header of an answer read at revision rev.
func (s *Server) header(rev uint64) *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: clusterID, MemberId: s.member, Revision: revision(rev)}
}

// call is what a call carries besides its request: its token's secret.
type call struct {
	secret string
}

// callOf reads the token from the call's metadata: "token" (what etcd's
// clients send) or "authorization" (with or without "Bearer ").
func callOf(ctx context.Context) *call {
	c := &call{}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, k := range []string{rpctypes.TokenFieldNameGRPC, rpctypes.TokenFieldNameSwagger} {
		if v := md.Get(k); len(v) > 0 && v[0] != "" {
			c.secret = strings.TrimPrefix(v[0], "Bearer ")
			return c
		}
	}
	return c
}

// errNoToken refuses a call without a token when ACLs are on.
var errNoToken = status.Error(codes.Unauthenticated, "lockd has ACLs on: send a token's secret as the gRPC metadata \"token\" (or \"authorization\")")

// authorize returns the call's token: ok false when ACLs are off, an
// Unauthenticated error when they are on and the call has no valid one.
func (s *Server) authorize(c *call) (acl.Token, bool, error) {
	if !s.acl {
		return acl.Token{}, false, nil
	}
	if c.secret == "" {
		return acl.Token{}, true, errNoToken
	}
	tok, ok := s.b.ResolveToken(c.secret)
	if !ok {
		return acl.Token{}, true, rpctypes.ErrGRPCInvalidAuthToken
	}
	return tok, true, nil
}

// owner is the accessor id of the call's token, which owns the keys it
// writes (its limits on keys apply); "" with ACLs off.
func (s *Server) owner(c *call) (string, error) {
	tok, on, err := s.authorize(c)
	if err != nil || !on {
		return "", err
	}
	return tok.AccessorID, nil
}

// allowKeys checks that the call's token has access on every key of the
// range [key, end) (end empty: the key alone; see keyRange).
func (s *Server) allowKeys(c *call, key, end []byte, access acl.Access) error {
	tok, on, err := s.authorize(c)
	if err != nil || !on {
		return err
	}
	if !rangeAllowed(tok, key, end, access) {
		return rpctypes.ErrGRPCPermissionDenied
	}
	return nil
}

// rangeAllowed reports whether tok has access on every key of [key, end):
// for one key, as acl.Allowed says; for a range, some key rule's prefix
// must start key and the range must end within that prefix's keys.
func rangeAllowed(tok acl.Token, key, end []byte, access acl.Access) bool {
	if len(end) == 0 {
		return acl.Allowed(tok, acl.Action{Kind: acl.Key, Name: string(key), Access: access})
	}
	if tok.Admin {
		return true
	}
	for _, r := range tok.Rules {
		if r.Kind != acl.Key || (r.Access != acl.Write && r.Access != access) || !strings.HasPrefix(string(key), r.Prefix) {
			continue
		}
		if r.Prefix == "" {
			return true
		}
		if !isAll(end) && string(end) <= string(fsm.PrefixEnd([]byte(r.Prefix))) {
			return true
		}
	}
	return false
}

func isAll(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// ownSession checks that the call's token may act on session id.
func (s *Server) ownSession(c *call, id string) error {
	tok, on, err := s.authorize(c)
	if err != nil || !on {
		return err
	}
	owner, exists := s.b.SessionOwner(id)
	if exists && !acl.Owns(tok, owner) {
		return rpctypes.ErrGRPCPermissionDenied
	}
	return nil
}

// grpcErr translates an error of the node into the status etcd's clients
// know: etcd's own errors where one means the same, so that clients
// react as they do to etcd (retry on no leader, a lease gone, ...).
func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var compacted *api.CompactedError
	var fcompacted *fsm.CompactedError
	switch {
	case errors.As(err, &compacted), errors.As(err, &fcompacted):
		return rpctypes.ErrGRPCCompacted
	case errors.Is(err, fsm.ErrFutureRevision):
		return rpctypes.ErrGRPCFutureRev
	case errors.Is(err, fsm.ErrSessionExists):
		return rpctypes.ErrGRPCLeaseExist
	case errors.Is(err, fsm.ErrBadCommand):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return rpctypes.ErrGRPCDeadlineExceeded
	}
	var e *api.Error
	if !errors.As(err, &e) {
		return status.Error(codes.Unknown, err.Error())
	}
	switch e.Code {
	case api.CodeNoLeader, api.CodeRemoved:
		return rpctypes.ErrGRPCNoLeader
	case api.CodeTimeout:
		return rpctypes.ErrGRPCTimeout
	case api.CodeSessionExpired, api.CodeNotFound:
		return rpctypes.ErrGRPCLeaseNotFound
	case api.CodeUnauthorized:
		return rpctypes.ErrGRPCInvalidAuthToken
	case api.CodeForbidden:
		return rpctypes.ErrGRPCPermissionDenied
	case api.CodeQuotaExceeded:
		return status.Error(codes.ResourceExhausted, e.Message)
	case api.CodeTooMany, api.CodeOverloaded:
		return status.Error(codes.ResourceExhausted, e.Message)
	case api.CodeStorageFull:
		return rpctypes.ErrGRPCNoSpace
	case api.CodeBadRequest, api.CodeTooLarge:
		return status.Error(codes.InvalidArgument, e.Message)
	case api.CodeStaleToken, api.CodeNotHolder:
		return status.Error(codes.FailedPrecondition, e.Message)
	}
	return status.Error(codes.Unknown, fmt.Sprintf("%s: %s", e.Code, e.Message))
}
