package traffic

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Gate lets a fault hold the workers' writes back for a while, and cut
// the workers' clients off from some nodes: the lease schedule needs a
// quiet log, then writes that reach only the new leader (see package
// failpoint). Every write a worker of this process sends to lockd passes
// through the gate; reads do not, so they go on while it is closed. The
// per-node readers and the child fence clients are not gated.
//
// The zero Gate is open and cuts nothing. A nil *Gate is always open.
type Gate struct {
	mu       sync.Mutex
	shut     chan struct{} // non-nil while closed; closed by Open
	inflight int
	idle     chan struct{}   // closed when inflight drops to 0 while shut
	cut      map[string]bool // host:port the workers may not reach
}

// errCut is what a worker's client gets for a node it is cut from. It
// comes wrapped as a failed dial (cutError), so that the library knows the
// request was not sent and moves on to the next endpoint, as it would for
// a dead node, whatever the call.
var errCut = errors.New("traffic: cut from this node by the harness")

func cutError(host string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: cutAddr(host), Err: errCut}
}

// cutAddr is a net.Addr for the host:port a request was refused for.
type cutAddr string

func (a cutAddr) Network() string { return "tcp" }
func (a cutAddr) String() string  { return string(a) }

// Cut stops the workers' clients from reaching the nodes at these base
// URLs (http://host:port) until Uncut. Requests already sent go on.
func (g *Gate) Cut(urls ...string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut == nil {
		g.cut = map[string]bool{}
	}
	for _, u := range urls {
		g.cut[strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")] = true
	}
}

// Uncut lets the workers reach every node again.
func (g *Gate) Uncut() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = nil
}

func (g *Gate) isCut(host string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cut[host]
}

// transport returns a RoundTripper over base that refuses the hosts the
// gate cuts.
func (g *Gate) transport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if g.isCut(r.URL.Host) {
			return nil, cutError(r.URL.Host)
		}
		return base.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// enter waits until the gate is open and counts a write in flight. It
// returns false, counting nothing, if ctx ends first.
func (g *Gate) enter(ctx context.Context) bool {
	if g == nil {
		return ctx.Err() == nil
	}
	for {
		g.mu.Lock()
		if g.shut == nil {
			g.inflight++
			g.mu.Unlock()
			return true
		}
		ch := g.shut
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// leave ends a write that enter counted.
func (g *Gate) leave() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// pass waits for the gate like enter and returns the func that ends the
// write; ok is false if ctx ended first (leave is then a no-op).
func (g *Gate) pass(ctx context.Context) (leave func(), ok bool) {
	if !g.enter(ctx) {
		return func() {}, false
	}
	return g.leave, true
}

// passSoon is pass for writes that must go out even at the end of a run
// (releases, resigns, session destroys): it waits at most passWait, then
// lets the write through ungated.
func (g *Gate) passSoon(ctx context.Context) (leave func()) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passWait)
	defer cancel()
	leave, _ = g.pass(ctx)
	return leave
}

// passWait bounds passSoon's wait. The lease schedule keeps the gate
// closed for at most about 20 s (its waits for writes in flight, a settled
// log and a vote round, with 1 s election timeouts), so it is never
// bypassed.
const passWait = 30 * time.Second

// Close stops new writes and waits until the writes in flight have
// returned, or ctx ends (then the gate stays closed and Close returns
// ctx's error). Open reopens it either way.
func (g *Gate) Close(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
	if g.inflight == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Open lets writes through again.
func (g *Gate) Open() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}
