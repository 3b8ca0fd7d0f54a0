// Package clientrate bounds the requests each client address may send to
// a node: a token bucket per address, shared by the HTTP API (package
// httpapi) and etcd's API (package etcdapi), each with its own limiter.
package clientrate

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config is a limit: the sustained requests per second of one client
// address, and how many may come at once. Zero Rate means no limit.
type Config struct {
	Rate  float64
	Burst int
}

// maxClients bounds the addresses a Limiter remembers; past it, the ones
// idle longest are forgotten (they start again with a full burst).
const maxClients = 100000

// Limiter keeps a token bucket per client address. A nil *Limiter allows
// everything.
type Limiter struct {
	cfg Config
	mu  sync.Mutex
	m   map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// New returns a Limiter for cfg, nil when cfg sets no limit.
func New(cfg Config) *Limiter {
	if cfg.Rate <= 0 {
		return nil
	}
	return &Limiter{cfg: cfg, m: make(map[string]*bucket)}
}

// Rate is the limit's sustained requests per second.
func (l *Limiter) Rate() float64 { return l.cfg.Rate }

// Allow takes one request of client at now; when refused, it returns how
// long until one would be allowed.
func (l *Limiter) Allow(client string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[client]
	if !ok {
		if len(l.m) >= maxClients {
			l.forgetIdle(now)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.cfg.Rate), max(1, l.cfg.Burst))}
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
func (l *Limiter) forgetIdle(now time.Time) {
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
