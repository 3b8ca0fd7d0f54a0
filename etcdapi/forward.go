package etcdapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lockd/lockd/internal/ctxsleep"
)

// Forwarding. A call only the leader may answer (writes, linearizable
// reads, the leases) that reaches a follower is sent to the leader's peer
// port as an HTTP request, as the HTTP API forwards its own: POST
// ForwardPath + the gRPC method name, the request in protobuf, the token
// in HeaderToken. The leader serves it with the same code as a call of its
// own (authorizing it itself) and answers with a byte that says ok (0,
// the response follows in protobuf) or error (1, a google.rpc.Status).
//
// What the client learns when forwarding fails follows the HTTP API's
// rule: etcd's "no leader" (Unavailable) while nothing reached the leader,
// and "request timed out" (Unavailable too, the outcome unknown) once the
// request may have reached it.

// ForwardPath starts the paths of forwarded calls on the peer port.
const ForwardPath = "/etcd/v3/"

// HeaderToken carries a forwarded call's token.
const HeaderToken = "X-Lockd-Etcd-Token" //nolint:gosec // G101: the name of a header, not a credential

// maxForwardBody bounds a forwarded request or answer.
const maxForwardBody = 64 << 20

// message is a protobuf message of etcd's API (gogo's generated code).
type message interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// method is one call the leader serves for its followers.
type method struct {
	newReq func() message
	serve  func(context.Context, *call, message) (message, error)
}

func methodOf[Req any, PReq interface {
	*Req
	message
}, Resp message](f func(context.Context, *call, PReq) (Resp, error)) method {
	return method{
		newReq: func() message { return PReq(new(Req)) },
		serve: func(ctx context.Context, c *call, m message) (message, error) {
			return f(ctx, c, m.(PReq))
		},
	}
}

// invoke serves a call: here when leader is false (a serializable read)
// or this node leads, else by forwarding it to the leader. The answer's
// error is a gRPC status.
//
// Through an election it waits, as etcd holds a request rather than fail
// it (etcd's clients retry no write that fails for want of a leader): a
// call that finds no leader, or is answered "no leader" (nothing reached
// the leader, or the leader refused it before writing anything), is
// tried again once a leader is known, for up to leaderWait.
func invoke[PReq message, Resp any, PResp interface {
	*Resp
	message
}](ctx context.Context, s *Server, name string, req PReq, leader bool, local func(context.Context, *call, PReq) (PResp, error)) (PResp, error) {
	c := callOf(ctx)
	give := time.Now().Add(leaderWait)
	for {
		var out PResp
		var err error
		if isLeader, to := s.b.Leader(); !leader || isLeader {
			out, err = local(ctx, c, req)
			err = grpcErr(err)
		} else {
			out = PResp(new(Resp))
			err = s.forward(ctx, to.Peer, name, c, req, out)
		}
		if err == nil {
			return out, nil
		}
		if !leader || !noLeader(err) || !time.Now().Add(leaderPoll).Before(give) ||
			ctxsleep.Sleep(ctx, leaderPoll) != nil {
			return nil, err
		}
	}
}

// noLeader reports whether err says no node did anything with the call
// for want of a leader: etcd's "no leader", answered by this node, or by
// the node it was forwarded to (with a note of its own), never a call
// whose outcome is unknown ("request timed out").
func noLeader(err error) bool {
	s, ok := status.FromError(err)
	want := status.Convert(rpctypes.ErrGRPCNoLeader)
	return ok && s.Code() == want.Code() && strings.HasPrefix(s.Message(), want.Message())
}

// leaderWait bounds how long a call that needs the leader waits for one
// through an election before it is answered "no leader"; leaderPoll is
// how often it tries again meanwhile.
const (
	leaderWait = 5 * time.Second
	leaderPoll = 20 * time.Millisecond
)

// forward sends a call to the leader at peer and decodes its answer into out.
func (s *Server) forward(ctx context.Context, peer, name string, c *call, req, out message) error {
	if peer == "" || s.peer == nil {
		return rpctypes.ErrGRPCNoLeader
	}
	body, err := req.Marshal()
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	limit := s.margin
	if d, ok := ctx.Deadline(); ok {
		limit += time.Until(d)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+peer+ForwardPath+strings.TrimPrefix(name, "/"), bytes.NewReader(body))
	if err != nil {
		return rpctypes.ErrGRPCNoLeader
	}
	r.Header.Set("Content-Type", "application/x-protobuf")
	if c.secret != "" {
		r.Header.Set(HeaderToken, c.secret)
	}
	var sent atomic.Bool
	r = r.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// From the connection on, the leader may have read the call:
		// whatever happens next, its outcome is unknown.
		GotConn: func(httptrace.GotConnInfo) { sent.Store(true) },
	}))
	resp, err := s.peer.RoundTrip(r)
	if err != nil {
		if sent.Load() {
			return rpctypes.ErrGRPCTimeout
		}
		return rpctypes.ErrGRPCNoLeader
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardBody))
	switch {
	case err != nil:
		return rpctypes.ErrGRPCTimeout
	case resp.StatusCode != http.StatusOK || len(b) == 0:
		// Not an etcd answer: a leader without this layer, or one that
		// refused the request before serving it.
		return status.Errorf(codes.Unavailable, "etcdserver: the leader did not serve the forwarded call (HTTP %d)", resp.StatusCode)
	case b[0] == 0:
		if err := out.Unmarshal(b[1:]); err != nil {
			return status.Errorf(codes.Internal, "a forwarded answer: %v", err)
		}
		return nil
	}
	var st spb.Status
	if err := proto.Unmarshal(b[1:], &st); err != nil {
		return status.Errorf(codes.Internal, "a forwarded error: %v", err)
	}
	return status.FromProto(&st).Err()
}

// ForwardHandler serves the calls followers forward (see ForwardPath);
// the peer port mounts it.
func (s *Server) ForwardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "/" + strings.TrimPrefix(r.URL.Path, ForwardPath)
		m, ok := s.methods[name]
		if !ok || r.Method != http.MethodPost {
			http.Error(w, "no such forwarded call", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxForwardBody))
		if err != nil {
			http.Error(w, "reading the forwarded call", http.StatusBadRequest)
			return
		}
		req := m.newReq()
		var out message
		if err = req.Unmarshal(b); err != nil {
			err = status.Errorf(codes.InvalidArgument, "a forwarded call: %v", err)
		} else if isLeader, _ := s.b.Leader(); !isLeader {
			err = status.Error(codes.Unavailable, "etcdserver: no leader (the node a call was forwarded to does not lead either)")
		} else {
			out, err = m.serve(r.Context(), &call{secret: r.Header.Get(HeaderToken)}, req)
		}
		var answer []byte
		if err == nil {
			var mb []byte
			if mb, err = out.Marshal(); err == nil {
				answer = append([]byte{0}, mb...)
			}
		}
		if err != nil {
			sb, merr := proto.Marshal(status.Convert(grpcErr(err)).Proto())
			if merr != nil {
				http.Error(w, merr.Error(), http.StatusInternalServerError)
				return
			}
			answer = append([]byte{1}, sb...)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(answer)
	})
}
