package mux

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a connection accepted by a Mux or dialed by a Layer. It is a
// net.Conn that obeys the node's fault rules and knows which node is at the
// other end. Addresses and everything else are the underlying TCP (with
// WithTLS, TLS) connection's; so are deadlines until a delay line takes
// over a direction, after which Conn enforces them itself with the same
// errors.
//
// Without rules a Read or a Write goes straight to the socket. A direction
// that an In rule (any) or an Out Delay has reached is served by a delay
// line with a goroutine of its own from then until Close: the inbound one
// reads the socket all the time, so that bytes are judged by the rule in
// force when they arrive, whether or not a Read is waiting.
type Conn struct {
	net.Conn
	remoteID string
	faults   *Faults
	// rules are the rules for remoteID, nil when there are none. Faults
	// replaces them under its lock; Read and Write load them without one.
	rules atomic.Pointer[PeerRules]

	// in is the inbound line, created (under Faults' lock, before the rules
	// that need it are stored) when an In rule first reaches the connection;
	// out is the outbound line, created by the first Write under an Out
	// Delay. Neither goes away before Close.
	in      atomic.Pointer[line]
	out     atomic.Pointer[line]
	outOnce sync.Once
	// gate is held shared by Reads that go straight to the socket. The
	// inbound line's goroutine takes it before it starts reading, so that
	// the bytes such a Read got first are in the line before any it reads.
	gate sync.RWMutex

	// dmu guards the deadlines the caller set, which the lines enforce once
	// their goroutines own the socket, and the hand-over itself.
	dmu      sync.Mutex
	rdl, wdl time.Time

	done      chan struct{} // closed by Close
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// newConn wraps raw, a connection with peer, without rules.
func newConn(raw net.Conn, peer string, f *Faults) *Conn {
	return &Conn{Conn: raw, remoteID: peer, faults: f, done: make(chan struct{})}
}

// RemoteID returns the peer name fault rules for this connection are keyed
// by. For an accepted connection it is the node ID the dialer sent in its
// header (authenticated by the dialer's certificate with WithTLS, not
// otherwise); for a dialed one it is the ID
// registered for the address with Faults.SetPeerAddr, or the address itself.
func (c *Conn) RemoteID() string { return c.remoteID }

// setRules makes r the connection's rules, starting the inbound line first
// if r has an In rule and there is none yet. Faults calls it under its lock.
func (c *Conn) setRules(r PeerRules) {
	if r.In != None && c.in.Load() == nil {
		l := newLine()
		c.in.Store(l)
		go c.pumpIn(l)
	}
	// A Blackhole or a Drop cuts what a Delay still holds in its direction.
	if l := c.in.Load(); l != nil && (r.In == Blackhole || r.In == Drop) {
		l.discard()
	}
	if l := c.out.Load(); l != nil && (r.Out == Blackhole || r.Out == Drop) {
		l.discard()
	}
	if r == (PeerRules{}) {
		c.rules.Store(nil)
		return
	}
	c.rules.Store(&r)
}

// Read reads from the connection. Bytes are judged by the In rule in force
// when they arrive (for a Read that was already blocked in the socket when
// the rule was set, when that read returns): under Blackhole they are lost,
// under Delay they are held for the delay, and a Read returns them no
// earlier, in order. Under Drop, Read fails with ErrDropped. A byte held by
// a delay is lost if, when its time comes, a Blackhole or a Drop is in
// force. Errors of the underlying connection, including EOF, are passed
// through even under Blackhole, after the bytes held ahead of them.
func (c *Conn) Read(p []byte) (int, error) {
	if l := c.in.Load(); l != nil {
		return c.readLine(l, p)
	}
	c.gate.RLock()
	if l := c.in.Load(); l != nil {
		c.gate.RUnlock()
		return c.readLine(l, p)
	}
	n, err := c.Conn.Read(p)
	l := c.in.Load()
	if n == 0 || l == nil {
		c.gate.RUnlock()
		return n, err
	}
	// An In rule reached the connection while the read was blocked: what
	// it returned arrived under that rule.
	c.arrive(l, p[:n], time.Now())
	c.gate.RUnlock()
	return c.readLine(l, p)
}

// readLine is Read once the connection has an inbound line.
func (c *Conn) readLine(l *line, p []byte) (int, error) {
	for {
		if c.closed.Load() {
			return 0, c.opError("read", net.ErrClosed)
		}
		rule, _ := c.rules.Load().in()
		if rule == Drop {
			return 0, c.opError("read", ErrDropped)
		}
		if len(p) == 0 {
			return 0, nil
		}
		now := time.Now()
		dl := c.readDeadline()
		if !dl.IsZero() && !now.Before(dl) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		n, until, ch, err := l.take(p, now, rule == Blackhole)
		if n > 0 || err != nil {
			return n, err
		}
		if !dl.IsZero() && (until.IsZero() || dl.Before(until)) {
			until = dl
		}
		if errors.Is(wait(ch, c.done, until), errWaitClosed) {
			return 0, c.opError("read", net.ErrClosed)
		}
	}
}

// arrive puts b, read from the socket at now, into the inbound line as the
// In rule in force says.
func (c *Conn) arrive(l *line, b []byte, now time.Time) {
	switch rule, d := c.rules.Load().in(); rule {
	case None:
		l.push(b, now)
	case Delay:
		l.push(b, now.Add(d))
	default:
		l.lost.Add(int64(len(b)))
	}
}

// pumpIn reads the socket into the inbound line until the connection fails
// or is closed.
func (c *Conn) pumpIn(l *line) {
	c.gate.Lock()
	c.dmu.Lock()
	l.piped.Store(true)
	_ = c.Conn.SetReadDeadline(time.Time{})
	c.dmu.Unlock()
	c.gate.Unlock()

	buf := make([]byte, lineChunk)
	for {
		if l.waitRoom(noDeadline, c.done) != nil {
			return
		}
		n, err := c.Conn.Read(buf)
		now := time.Now()
		if n > 0 {
			c.arrive(l, buf[:n], now)
		}
		if err != nil {
			if rule, d := c.rules.Load().in(); rule == Delay {
				now = now.Add(d) // the end of the stream is delayed too
			}
			l.fail(err, now, false)
			return
		}
	}
}

// Write writes to the connection. Bytes are judged by the Out rule in force
// when Write is called: under Drop it fails with ErrDropped; under
// Blackhole it reports len(p) written and sends nothing; under Delay it
// queues p and returns, and p leaves for the peer the delay later, in
// order, unless a Blackhole or a Drop is in force by then. Bytes lost this
// way are lost for good, so a framed protocol on the connection usually
// fails to decode once the rule is healed; that is as close to a real loss
// as a byte stream allows. A Write already in the socket when a rule is set
// finishes as it began: its bytes count as sent before the rule.
func (c *Conn) Write(p []byte) (int, error) {
	r, o := c.rules.Load(), c.out.Load()
	if r == nil && o == nil {
		return c.Conn.Write(p)
	}
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	rule, d := r.out()
	switch rule {
	case Drop:
		return 0, c.opError("write", ErrDropped)
	case Blackhole:
		return len(p), nil
	case Delay:
		o = c.startOut()
	}
	if o == nil {
		return c.Conn.Write(p)
	}
	return c.writeLine(o, p, d)
}

// writeLine queues p on the outbound line, due d from now, waiting for room
// as long as the write deadline allows.
func (c *Conn) writeLine(o *line, p []byte, d time.Duration) (int, error) {
	for off := 0; off < len(p); {
		switch err := o.waitRoom(c.writeDeadline, c.done); err {
		case nil:
		case errWaitClosed, errWaitDeadline: //nolint:errorlint // waitRoom returns its sentinels unwrapped
			return off, c.opError("write", err)
		default:
			return off, err // the socket failed, as the line's goroutine found
		}
		end := min(off+lineChunk, len(p))
		o.push(p[off:end], time.Now().Add(d))
		off = end
	}
	return len(p), nil
}

// startOut returns the outbound line, starting it on first use.
func (c *Conn) startOut() *line {
	c.outOnce.Do(func() {
		l := newLine()
		c.dmu.Lock()
		c.out.Store(l)
		l.piped.Store(true)
		_ = c.Conn.SetWriteDeadline(time.Time{})
		c.dmu.Unlock()
		go c.pumpOut(l)
	})
	return c.out.Load()
}

// pumpOut writes the outbound line's chunks to the socket as they come due
// until the connection fails or is closed.
func (c *Conn) pumpOut(l *line) {
	for {
		b, ok := l.next(c.done)
		if !ok {
			return
		}
		if rule, _ := c.rules.Load().out(); rule == Blackhole || rule == Drop {
			l.lost.Add(int64(len(b)))
			continue
		}
		if _, err := c.Conn.Write(b); err != nil {
			l.fail(err, time.Time{}, true)
			return
		}
	}
}

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline of Reads, as net.Conn's does.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.rdl = t
	if l := c.in.Load(); l != nil {
		l.notify()
		if l.piped.Load() && !c.closed.Load() {
			return nil
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline of Writes, as net.Conn's does. Once a
// delay line serves writes, it bounds how long a Write waits for room in
// the line, not when the bytes reach the peer.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.wdl = t
	if l := c.out.Load(); l != nil && !c.closed.Load() {
		l.notify()
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *Conn) readDeadline() time.Time {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	return c.rdl
}

func (c *Conn) writeDeadline() time.Time {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	return c.wdl
}

// noDeadline is a deadline function for waits without one.
func noDeadline() time.Time { return time.Time{} }

// Close closes the connection and stops its lines' goroutines; bytes still
// held by a delay are discarded, as a reset would. It is safe to call more
// than once; later calls return the first call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.done)
		c.faults.untrack(c)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// opError wraps err the way the net package reports its own failures.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
