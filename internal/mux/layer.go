package mux

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Layer is one protocol's share of a Mux: a net.Listener for the
// connections that arrive with its byte, and a dialer that sends its byte.
// Connections it returns are *Conn. hashicorp/raft's StreamLayer is Layer
// with Dial's address typed as raft.ServerAddress.
type Layer struct {
	mux       *Mux
	proto     byte
	conns     chan *Conn
	done      chan struct{}
	closeOnce sync.Once
}

// Accept waits for the next connection with this Layer's protocol byte. It
// returns ErrClosed once the Layer or its Mux is closed.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, ErrClosed
	default:
	}
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close stops Accept and frees the protocol byte for another Listen. It
// leaves connections already accepted or dialed open, as closing a
// net.Listener does, and never fails.
func (l *Layer) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.mux.removeLayer(l)
	})
	return nil
}

// Addr returns the Mux's listening address.
func (l *Layer) Addr() net.Addr { return l.mux.Addr() }

// Dial connects to the Mux at addr and sends this Layer's protocol byte and
// this node's ID (with WithTLS, inside TLS once the handshake is done). The
// connection is attributed to the peer registered for addr with
// Faults.SetPeerAddr (else to addr) and obeys its Out rule: under Drop,
// Dial fails at once with ErrDropped; under Blackhole, it waits for the
// rule to be healed and fails with a timeout error (a net.Error whose
// Timeout is true) once timeout has passed. A timeout of zero or less means
// no limit, except for the TLS handshake and the header, which then have
// DefaultHandshakeTimeout.
func (l *Layer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	m := l.mux
	if !validNodeID(m.nodeID) {
		return nil, ErrBadNodeID
	}
	conn, peer, err := m.dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	if err := writeHeader(conn, l.proto, m.nodeID); err != nil {
		_ = conn.Close()
		return nil, dialError(addr, peer, err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		return nil, dialError(addr, peer, err)
	}
	c, err := m.faults.track(conn, peer, true)
	if err != nil {
		_ = conn.Close()
		return nil, dialError(addr, peer, err)
	}
	return c, nil
}

// dial connects to addr as the fault rules allow and runs the TLS
// handshake (with WithTLS). It returns the connection with a deadline set
// for the header (the dial's, else DefaultHandshakeTimeout from now), and
// the peer the dial is attributed to.
func (m *Mux) dial(addr string, timeout time.Duration) (net.Conn, string, error) {
	if m.isClosed() {
		return nil, "", ErrClosed
	}
	peer := m.faults.peerFor(addr)
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := m.faults.awaitDial(peer, deadline, m.closing); err != nil {
		return nil, peer, dialError(addr, peer, err)
	}
	d := net.Dialer{Deadline: deadline, LocalAddr: loopbackSource(m.Addr(), addr)}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, peer, err
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(DefaultHandshakeTimeout)
	}
	if err := raw.SetDeadline(deadline); err != nil {
		_ = raw.Close()
		return nil, peer, dialError(addr, peer, err)
	}
	if m.tls == nil {
		return raw, peer, nil
	}
	tc, err := m.clientHandshake(raw, addr)
	if err != nil {
		_ = raw.Close()
		return nil, peer, dialError(addr, peer, err)
	}
	return tc, peer, nil
}

// loopbackSource returns the address a dial from a Mux listening on local
// to addr should come from: the listening IP, when both are IPv4 loopback
// addresses (127.x.y.z) and the listening one is not 127.0.0.1, which the
// kernel chooses anyway; else nil (the kernel chooses, and binds no port
// before connecting). Nodes that share
// a machine on distinct loopback addresses are then told apart by source
// address too, which lets packet filters cut the links between them (the
// fault harness's iptables partitions). Only dials to a loopback IP are
// bound, so this never changes which peers a node can reach.
func loopbackSource(local net.Addr, addr string) net.Addr {
	l, ok := local.(*net.TCPAddr)
	if !ok || !l.IP.IsLoopback() || l.IP.To4() == nil || l.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return nil
	}
	return &net.TCPAddr{IP: l.IP}
}

// deliver hands c to Accept, or closes it if the Layer or the Mux closes
// first.
func (l *Layer) deliver(c *Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	case <-l.mux.closing:
		_ = c.Close()
	}
}

// dialError says which dial failed and why.
func dialError(addr, peer string, err error) error {
	if peer == addr {
		return fmt.Errorf("mux: dial %s: %w", addr, err)
	}
	return fmt.Errorf("mux: dial %s (%s): %w", addr, peer, err)
}
