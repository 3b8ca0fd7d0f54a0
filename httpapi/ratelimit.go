package httpapi

import (
	"net"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/clientrate"
	"github.com/lockd/lockd/internal/peerhttp"
)

// RateLimit bounds the requests one client address may send to a node.
// Zero Rate means no limit.
type RateLimit = clientrate.Config

// limited answers 429 too_many_requests with Retry-After, and returns
// true, when r's client is over its rate. Health checks and requests a
// follower forwarded over the peer port are not counted: the follower
// counted them.
func (s *Server) limited(w http.ResponseWriter, r *http.Request) bool {
	if s.rate == nil || peerhttp.FromPeer(r.Context()) || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ok, wait := s.rate.Allow(host, time.Now())
	if ok {
		return false
	}
	e := api.Errorf(api.CodeTooMany, "client %s sends more than %g requests per second; slow down", host, s.rate.Rate())
	e.RetryAfter = wait
	s.writeError(w, r, e)
	return true
}
