package httpapi

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
)

// forward serves r by proxying it to the leader when the route's policy
// says the leader must answer and this node is not the leader. It reports
// whether it answered r; if not, the caller serves r itself.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, p policy) bool {
	if p == local || p == leaderUnlessStale && readsLocally(r) {
		return false
	}
	isLeader, leaderHTTP := s.svc.Leader()
	if isLeader {
		return false
	}
	if via, ok := r.Header[http.CanonicalHeaderKey(HeaderForwarded)]; ok {
		s.writeError(w, r, noLeader("this node is not the leader either (the request was forwarded by %s); retry shortly", strings.Join(via, ", ")))
		return true
	}
	if leaderHTTP == "" {
		s.writeError(w, r, noLeader("no leader is known; retry shortly"))
		return true
	}
	target, err := leaderURL(leaderHTTP)
	if err != nil {
		e := noLeader("the leader's address %q is not usable; retry shortly", leaderHTTP)
		s.writeErrorStatus(w, r, codeStatus[e.Code].status, e, err)
		return true
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go s.watchLeader(ctx, cancel, leaderHTTP)
	s.proxy(target).ServeHTTP(w, r.WithContext(ctx))
	return true
}

// leaderWatchInterval is how often a forwarded request checks that the node
// it was sent to is still the leader.
const leaderWatchInterval = 100 * time.Millisecond

// watchLeader cancels a forwarded request when this node comes to believe
// in another leader. A leader that is paused or cut off would otherwise hold
// the request until it returns, long after the cluster moved on; the client
// instead gets no_leader at once and retries against the new leader.
func (s *Server) watchLeader(ctx context.Context, cancel context.CancelFunc, leaderHTTP string) {
	t := time.NewTicker(leaderWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if isLeader, now := s.svc.Leader(); isLeader || now != leaderHTTP && now != "" {
			cancel()
			return
		}
	}
}

// proxy returns a reverse proxy to the leader at target. It streams both
// bodies, ends the forwarded request when the client goes away (the inbound
// context), and relays the leader's status, headers and body unchanged.
func (s *Server) proxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwarded, s.name(pr.In))
		},
		Transport:     s.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e := noLeader("cannot reach the leader at %s; retry shortly", target.Host)
			if r.Context().Err() != nil {
				e = noLeader("the leader changed while the request was forwarded to %s; its outcome is unknown, retry", target.Host)
			}
			s.writeErrorStatus(w, r, codeStatus[e.Code].status, e, err)
		},
	}
}

// name is this node's name in the X-Lockd-Forwarded header.
func (s *Server) name(r *http.Request) string {
	if s.nodeID != "" {
		return s.nodeID
	}
	return r.Host
}

// noLeader returns a no_leader error that asks the client to retry in a
// second.
func noLeader(format string, args ...any) *wire.Error {
	e := wire.Errorf(wire.CodeNoLeader, format, args...)
	e.RetryAfter = time.Second
	return e
}

// leaderURL parses the leader's HTTP address, a URL or a bare host:port,
// as a member's address is checked when it joins.
func leaderURL(addr string) (*url.URL, error) {
	norm, err := normaliseHTTP(addr)
	if err != nil {
		return nil, err
	}
	return url.Parse(norm)
}
