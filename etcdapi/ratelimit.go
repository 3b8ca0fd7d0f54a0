package etcdapi

import (
	"context"
	"net"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/lockd/lockd/internal/ctxsleep"
)

// Each client address may send at most Config.RateLimit calls per second
// (the HTTP API's limit, counted on its own): a unary call past it is
// refused with etcd's "too many requests" (ResourceExhausted), as the
// HTTP API answers 429; a message on a stream (a keep-alive, a watch
// request) past it is held until the client's bucket allows it, so a
// stream is slowed, not broken. Calls a follower forwards reach the
// leader over the peer port, not through these interceptors: the
// follower counted them.

// clientOf is the address a call came from.
func clientOf(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	return host
}

func (s *Server) limitUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if ok, _ := s.rate.Allow(clientOf(ctx), time.Now()); !ok {
		return nil, rpctypes.ErrGRPCRequestTooManyRequests
	}
	return handler(ctx, req)
}

func (s *Server) limitStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &limitedStream{ServerStream: ss, s: s, client: clientOf(ss.Context())})
}

// limitedStream holds each message it receives until the client's bucket
// allows it.
type limitedStream struct {
	grpc.ServerStream
	s      *Server
	client string
}

func (l *limitedStream) RecvMsg(m any) error {
	if err := l.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	for {
		ok, wait := l.s.rate.Allow(l.client, time.Now())
		if ok {
			return nil
		}
		if err := ctxsleep.Sleep(l.Context(), wait); err != nil {
			return err
		}
	}
}
