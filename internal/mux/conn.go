package mux

import (
	"net"
	"sync"
	"sync/atomic"
)

// Conn is a connection accepted by a Mux or dialed by a Layer. It is a
// net.Conn that obeys the node's fault rules and knows which node is at the
// other end. Deadlines, addresses and everything else are the underlying
// TCP connection's.
type Conn struct {
	net.Conn
	remoteID string
	faults   *Faults
	// rules is PeerRules.pack() of the rules for remoteID, updated by
	// Faults under its lock and read here without one.
	rules     atomic.Uint32
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// RemoteID returns the peer name fault rules for this connection are keyed
// by. For an accepted connection it is the node ID the dialer sent in its
// header (which is not authenticated); for a dialed one it is the ID
// registered for the address with Faults.SetPeerAddr, or the address itself.
func (c *Conn) RemoteID() string { return c.remoteID }

// Read reads from the connection. Under an In rule it fails with ErrDropped
// (Drop), or discards what arrives and keeps waiting (Blackhole); bytes that
// are read after the rule is healed are delivered. The rule that judges
// bytes is the one in force when the underlying read returns them, so a
// Read already blocked when a rule is set obeys it too. Errors of the underlying
// connection, including EOF and deadline timeouts, are passed through even
// under Blackhole.
func (c *Conn) Read(p []byte) (int, error) {
	if c.rules.Load() == 0 || len(p) == 0 {
		n, err := c.Conn.Read(p)
		if n == 0 || c.rules.Load() == 0 {
			return n, err
		}
		// A rule was set while the read was blocked: what it returned
		// arrived under that rule.
		switch unpack(c.rules.Load()).In {
		case Drop:
			return 0, c.opError("read", ErrDropped)
		case Blackhole:
			if err != nil {
				return 0, err
			}
		default:
			return n, err
		}
	}
	for {
		switch unpack(c.rules.Load()).In {
		case Drop:
			return 0, c.opError("read", ErrDropped)
		case Blackhole:
			// p is scratch space here, which io.Reader allows.
			n, err := c.Conn.Read(p)
			if unpack(c.rules.Load()).In == Blackhole {
				if err != nil {
					return 0, err
				}
				continue
			}
			return n, err
		default:
			return c.Conn.Read(p)
		}
	}
}

// Write writes to the connection. Under an Out rule it fails with
// ErrDropped (Drop), or reports len(p) written while sending nothing
// (Blackhole). Bytes lost this way are lost for good, so a framed protocol
// on the connection usually fails to decode once the rule is healed; that is
// as close to a real loss as a byte stream allows.
func (c *Conn) Write(p []byte) (int, error) {
	if c.rules.Load() == 0 {
		return c.Conn.Write(p)
	}
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	switch unpack(c.rules.Load()).Out {
	case Drop:
		return 0, c.opError("write", ErrDropped)
	case Blackhole:
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Close closes the connection. It is safe to call more than once; later
// calls return the first call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.faults.untrack(c)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// opError wraps err the way the net package reports its own failures.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
