package httpapi

import (
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
	s.proxy(target).ServeHTTP(w, r)
	return true
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
