// Package connlimit bounds the connections a node keeps open: per client
// address and in total. It wraps a net.Listener; a connection past a limit
// is either closed at once (the peer port: its clients are nodes, which
// retry) or handed on marked, with a short deadline, so that the HTTP
// server can answer it 429 or 503 in JSON and close it (the API port).
//
// Connections handed on over a limit are themselves bounded (MaxOver at a
// time); past that they are closed at once. So a client that opens
// connections faster than the node answers holds at most Limits.PerClient
// of them, and the node at most Limits.Total + MaxOver, whatever the
// client does: the open-file limit is never reached through this
// listener, and its other clients are served.
package connlimit

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bounds the open connections of a listener. Zero means no limit.
type Limits struct {
	// PerClient bounds the connections from one IP address.
	PerClient int
	// Total bounds all connections.
	Total int
}

// Reason says which limit a connection went past.
type Reason string

// The limits a connection can go past.
const (
	OverPerClient Reason = "per_client"
	OverTotal     Reason = "total"
)

// MaxOver is how many connections past a limit a Listener that answers
// them holds at once; past that it closes them at once.
const MaxOver = 64

// OverDeadline is how long a connection past a limit may take to send its
// request and read the answer before it is closed.
const OverDeadline = 2 * time.Second

// Listener is a net.Listener that keeps its connections within Limits.
// Its Accept returns *Conn values.
type Listener struct {
	net.Listener
	lim    Limits
	answer bool
	onOver func(Reason, net.Addr, int)

	mu     sync.Mutex
	byAddr map[netip.Addr]int
	total  int
	over   int

	refused [2]atomic.Uint64 // by Reason: per_client, total
}

// Option configures a Listener.
type Option func(*Listener)

// AnswerOver hands connections past a limit on (at most MaxOver at a
// time), marked with their Reason and a deadline of OverDeadline, for the
// server to answer. Without it they are closed at once.
func AnswerOver() Option { return func(l *Listener) { l.answer = true } }

// OnOver calls f for each connection past a limit, with the reason, the
// client's address and how many connections the limit counted then. f
// must not block; a node logs through a logthrottle.Throttle.
func OnOver(f func(r Reason, from net.Addr, open int)) Option {
	return func(l *Listener) { l.onOver = f }
}

// New wraps l.
func New(l net.Listener, lim Limits, opts ...Option) *Listener {
	cl := &Listener{Listener: l, lim: lim, byAddr: map[netip.Addr]int{}}
	for _, o := range opts {
		o(cl)
	}
	return cl
}

// Accept waits for a connection within the limits (or, with AnswerOver, a
// marked one past them) and returns it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if cc := l.admit(c); cc != nil {
			return cc, nil
		}
	}
}

// admit counts c in, or refuses it: it returns nil after closing c.
func (l *Listener) admit(c net.Conn) *Conn {
	ip := clientIP(c.RemoteAddr())
	l.mu.Lock()
	var why Reason
	var count int
	switch {
	case l.lim.PerClient > 0 && ip.IsValid() && l.byAddr[ip] >= l.lim.PerClient:
		why, count = OverPerClient, l.byAddr[ip]
	case l.lim.Total > 0 && l.total >= l.lim.Total:
		why, count = OverTotal, l.total
	}
	if why == "" {
		l.byAddr[ip]++
		l.total++
		l.mu.Unlock()
		return &Conn{Conn: c, l: l, ip: ip}
	}
	l.refused[reasonIndex(why)].Add(1)
	keep := l.answer && l.over < MaxOver
	if keep {
		l.over++
	}
	l.mu.Unlock()
	if l.onOver != nil {
		l.onOver(why, c.RemoteAddr(), count)
	}
	if !keep {
		_ = c.Close()
		return nil
	}
	until := time.Now().Add(OverDeadline)
	_ = c.SetDeadline(until)
	return &Conn{Conn: c, l: l, ip: ip, over: why, until: until}
}

func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.over != "" {
		l.over--
		return
	}
	if l.byAddr[c.ip]--; l.byAddr[c.ip] <= 0 {
		delete(l.byAddr, c.ip)
	}
	l.total--
}

// Open returns the number of connections open within the limits.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Refused returns how many connections went past each limit since the
// listener was made (answered or closed).
func (l *Listener) Refused(r Reason) uint64 { return l.refused[reasonIndex(r)].Load() }

func reasonIndex(r Reason) int {
	if r == OverTotal {
		return 1
	}
	return 0
}

// clientIP is the IP address of a, or the zero Addr when a is not an IP
// address (such clients share no per-client count).
func clientIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// Conn is a connection a Listener accepted.
type Conn struct {
	net.Conn
	l     *Listener
	ip    netip.Addr
	over  Reason    // the limit it went past; "" within the limits
	until time.Time // with over: no deadline may be set past this
	once  sync.Once
}

// Over returns the limit c went past, or "" if it is within the limits.
func (c *Conn) Over() Reason { return c.over }

// Close closes the connection and counts it out.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// SetDeadline sets the connection's deadlines; one past a limit is kept
// within its OverDeadline, whatever the server asks (so are
// SetReadDeadline and SetWriteDeadline).
func (c *Conn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

// SetReadDeadline sets the read deadline, within OverDeadline past a limit.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

// SetWriteDeadline sets the write deadline, within OverDeadline past a limit.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

func (c *Conn) clamp(t time.Time) time.Time {
	if c.over == "" || (!t.IsZero() && t.Before(c.until)) {
		return t
	}
	return c.until
}

type connKey struct{}

// WithConn returns ctx carrying c, for http.Server.ConnContext: a handler
// then finds with OverOf whether its connection went past a limit. c may
// be a *tls.Conn over a *Conn.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	for {
		switch v := c.(type) {
		case *Conn:
			return context.WithValue(ctx, connKey{}, v)
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return ctx
		}
	}
}

// OverOf returns the limit the connection of a request with context ctx
// went past, or "" (also when WithConn was not used).
func OverOf(ctx context.Context) Reason {
	if c, ok := ctx.Value(connKey{}).(*Conn); ok {
		return c.over
	}
	return ""
}

// CloseWrite shuts down the writing side of a TCP connection, which
// net/http uses to let a client read an answer before the connection
// closes (a client that sent more than was read would otherwise get a
// reset in place of the answer).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
