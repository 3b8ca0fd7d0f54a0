package mux

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lockd/lockd/internal/logthrottle"
)

// DefaultHeaderTimeout is how long an accepted connection may take to send
// its protocol byte and header before it is closed. It bounds the goroutine
// a silent or hostile client can hold; a healthy peer sends the header in
// its first segment, so the bound only needs to absorb a busy machine.
const DefaultHeaderTimeout = 5 * time.Second

// maxAcceptBackoff caps the pause between retries when Accept fails with a
// transient error such as running out of file descriptors.
const maxAcceptBackoff = time.Second

// Option changes a Mux's defaults; pass options to New.
type Option func(*Mux)

// WithHeaderTimeout sets how long an accepted connection may take to send
// its header (DefaultHeaderTimeout if unset or not positive).
func WithHeaderTimeout(d time.Duration) Option {
	return func(m *Mux) {
		if d > 0 {
			m.headerTimeout = d
		}
	}
}

// Mux accepts connections on one listener and routes each to the Layer
// registered for its protocol byte. Create it with New, register layers
// with Listen, run Serve in a goroutine, and stop it with Close.
type Mux struct {
	ln            net.Listener
	nodeID        string
	logger        *slog.Logger
	headerTimeout time.Duration
	faults        *Faults
	tls           *tls.Config           // nil: plain TCP
	tlsWarn       *logthrottle.Throttle // refused handshakes' warnings

	mu      sync.Mutex
	layers  map[byte]*Layer
	pending map[net.Conn]struct{} // accepted, header not read yet
	closed  bool
	closing chan struct{} // closed by Close
	wg      sync.WaitGroup
}

// New returns a Mux that will serve ln for the node nodeID, which it sends
// in the header of every connection its layers dial (1 to MaxNodeIDLen
// bytes; Dial fails with ErrBadNodeID otherwise). It does no I/O. A nil
// logger discards logs.
func New(ln net.Listener, nodeID string, logger *slog.Logger, opts ...Option) *Mux {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "mux", "node", nodeID)
	m := &Mux{
		ln:            ln,
		nodeID:        nodeID,
		logger:        logger,
		headerTimeout: DefaultHeaderTimeout,
		tlsWarn:       logthrottle.New(tlsWarnInterval),
		faults:        newFaults(logger),
		layers:        make(map[byte]*Layer),
		pending:       make(map[net.Conn]struct{}),
		closing:       make(chan struct{}),
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Addr returns the listener's address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Faults returns the node's fault rules, which apply to every connection of
// this Mux.
func (m *Mux) Faults() *Faults { return m.faults }

// Listen registers a Layer for proto and returns it. Connections whose
// first byte is proto go to it from then on; connections for bytes nobody
// listens on are closed. Listen panics if proto already has an open Layer;
// once that Layer is closed the byte can be registered again.
func (m *Mux) Listen(proto byte) *Layer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.layers[proto]; ok {
		panic(fmt.Sprintf("mux: protocol byte %d registered twice", proto))
	}
	l := &Layer{mux: m, proto: proto, conns: make(chan *Conn), done: make(chan struct{})}
	if m.closed {
		l.closeOnce.Do(func() { close(l.done) })
		return l
	}
	m.layers[proto] = l
	return l
}

// Serve accepts connections until Close is called, then returns ErrClosed.
// It returns earlier, with the listener's error, if the listener is closed
// by someone else. Each connection's header is read in its own goroutine,
// under the header timeout. Call Serve once.
func (m *Mux) Serve() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()

	var backoff time.Duration
	for {
		raw, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() {
				return ErrClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			m.logger.Warn("accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-m.closing:
				return ErrClosed
			}
		}
		backoff = 0
		if !m.addPending(raw) {
			_ = raw.Close()
			return ErrClosed
		}
		go m.handle(raw)
	}
}

// Close stops Serve, closes the listener, every Layer and every open
// connection, and waits for the Mux's goroutines to finish. It is safe to
// call more than once. Fault rules are kept.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.closing)
	layers := make([]*Layer, 0, len(m.layers))
	for _, l := range m.layers {
		layers = append(layers, l)
	}
	for c := range m.pending {
		_ = c.Close()
	}
	m.mu.Unlock()

	err := m.ln.Close()
	for _, l := range layers {
		_ = l.Close()
	}
	m.faults.shutdown()
	m.wg.Wait()
	m.logger.Debug("mux closed")
	return err
}

// handle runs raw's TLS handshake, if any, reads its header and hands it
// to its Layer, or closes it.
func (m *Mux) handle(raw net.Conn) {
	defer m.wg.Done()
	conn, l, id, err := m.open(raw)
	m.removePending(raw)
	if err == nil {
		var c *Conn
		if c, err = m.faults.track(conn, id, false); err == nil {
			l.deliver(c)
			return
		}
	}
	m.logger.Debug("connection refused", "remote_addr", raw.RemoteAddr(), "peer", id, "err", err)
	_ = raw.Close()
}

// open runs the TLS handshake (with WithTLS) and reads the header, all
// under the header timeout, and returns the connection to use from then
// on, the Layer for its protocol byte and the dialer's node ID.
func (m *Mux) open(raw net.Conn) (net.Conn, *Layer, string, error) {
	if err := raw.SetDeadline(time.Now().Add(m.headerTimeout)); err != nil {
		return nil, nil, "", err
	}
	conn := raw
	if m.tls != nil {
		var err error
		if conn, err = m.serverHandshake(raw); err != nil {
			return nil, nil, "", err
		}
	}
	proto, err := readProto(conn)
	if err != nil {
		return nil, nil, "", err
	}
	l := m.layer(proto)
	if l == nil {
		return nil, nil, "", fmt.Errorf("%w %d", errUnknownProto, proto)
	}
	id, err := readNodeID(conn)
	if err != nil {
		return nil, nil, "", err
	}
	if err := checkPeerName(conn, id); err != nil {
		return nil, nil, id, err
	}
	return conn, l, id, conn.SetDeadline(time.Time{})
}

// layer returns the open Layer for proto, or nil.
func (m *Mux) layer(proto byte) *Layer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.layers[proto]
}

// removeLayer unregisters l if it is still the Layer for its byte.
func (m *Mux) removeLayer(l *Layer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.layers[l.proto] == l {
		delete(m.layers, l.proto)
	}
}

// addPending records a connection whose header is yet to be read, so that
// Close can cut it short, and counts its goroutine. It reports false once
// the Mux is closed.
func (m *Mux) addPending(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.pending[c] = struct{}{}
	m.wg.Add(1)
	return true
}

// removePending forgets a connection whose header has been read.
func (m *Mux) removePending(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, c)
}

// isClosed reports whether Close has been called.
func (m *Mux) isClosed() bool {
	select {
	case <-m.closing:
		return true
	default:
		return false
	}
}
