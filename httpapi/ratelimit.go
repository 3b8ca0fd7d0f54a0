package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/peerhttp"
)

// RateLimit bounds the requests one client address may send to a node.
// Zero Rate means no limit.
type RateLimit struct {
	// Rate is the sustained requests per second, Burst how many may come
	// at once.
	Rate  float64
	Burst int
}

// maxClients bounds the addresses the limiter remembers; past it, the
// ones idle longest are forgotten (they start again with a full burst).
const maxClients = 100000

// clientLimiter keeps a token bucket per client IP address.
type clientLimiter struct {
	cfg RateLimit
	mu  sync.Mutex
	m   map[string]*clientBucket
}

type clientBucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newClientLimiter(cfg RateLimit) *clientLimiter {
	if cfg.Rate <= 0 {
		return nil
	}
	return &clientLimiter{cfg: cfg, m: make(map[string]*clientBucket)}
}

// allow takes one request of client; when refused, it returns how long
// until one would be allowed.
func (l *clientLimiter) allow(client string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[client]
	if !ok {
		if len(l.m) >= maxClients {
			l.forgetIdle(now)
		}
		b = &clientBucket{lim: rate.NewLimiter(rate.Limit(l.cfg.Rate), max(1, l.cfg.Burst))}
		l.m[client] = b
	}
	b.last = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// forgetIdle drops the half of the buckets idle longest. The caller holds
// l.mu.
func (l *clientLimiter) forgetIdle(now time.Time) {
	var total time.Duration
	for _, b := range l.m {
		total += now.Sub(b.last)
	}
	mean := total / time.Duration(len(l.m))
	for c, b := range l.m {
		if now.Sub(b.last) >= mean {
			delete(l.m, c)
		}
	}
}

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
	ok, wait := s.rate.allow(host, time.Now())
	if ok {
		return false
	}
	e := api.Errorf(api.CodeTooMany, "client %s sends more than %g requests per second; slow down", host, s.rate.cfg.Rate)
	e.RetryAfter = wait
	s.writeError(w, r, e)
	return true
}
