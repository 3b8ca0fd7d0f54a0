package classic

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Transport carries one node's election messages to its peers.
//
// Send must not block on the network and must not call recv or lost
// itself (Node calls it with its lock held): it queues the message. A
// message that cannot be delivered is reported through lost, from the
// transport's own goroutine, or silently dropped; either way it counts as
// sent. recv and lost may be called concurrently from several goroutines,
// and not after Close returns.
type Transport interface {
	// Open starts delivering: recv for every message that arrives, with
	// the id of the peer that sent it; lost for every message that could
	// not be sent. Open is called once, before Send.
	Open(recv func(from string, m Message), lost func(to string, m Message)) error
	// Send queues m for peer to.
	Send(to string, m Message)
	// Close stops delivery and releases the transport's connections.
	Close() error
}

// Layer is what MuxTransport needs of internal/mux: *mux.Layer has these
// methods. Connections that Accept returns must tell the peer's node id
// through a RemoteID() string method, as *mux.Conn does.
type Layer interface {
	Dial(addr string, timeout time.Duration) (net.Conn, error)
	Accept() (net.Conn, error)
	Close() error
}

// MuxTransport defaults.
const (
	// DefaultDialTimeout bounds a dial, so that a peer behind a blackhole
	// costs its queued messages, not the transport.
	DefaultDialTimeout = 500 * time.Millisecond
	// DefaultWriteTimeout bounds writing one message.
	DefaultWriteTimeout = 500 * time.Millisecond
	// sendQueueLen is how many messages may wait for one peer; more are
	// dropped (and count as sent).
	sendQueueLen = 128
)

// MuxTransport is a Transport over an internal/mux Layer. Messages are
// lines of JSON. It keeps one outgoing connection per peer, dialled when
// there is something to send and dialled again after a failure; a message
// it cannot dial or write for is reported lost, together with every message
// queued behind it. Incoming connections are the peers' outgoing ones, so
// between two nodes there is one connection each way.
type MuxTransport struct {
	layer Layer
	addrs map[string]string // peer id -> mux address
	log   *slog.Logger

	mu     sync.Mutex
	opened bool
	closed bool
	out    map[string]chan Message
	in     map[net.Conn]struct{}
	recv   func(string, Message)
	lost   func(string, Message)
	done   chan struct{}
	wg     sync.WaitGroup
}

// NewMuxTransport returns a transport that dials peers at addrs (node id
// to the address of its mux) and accepts on layer, which it owns from now
// on and closes with Close. It does no I/O. A nil logger discards.
func NewMuxTransport(layer Layer, addrs map[string]string, logger *slog.Logger) *MuxTransport {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &MuxTransport{
		layer: layer,
		addrs: make(map[string]string, len(addrs)),
		log:   logger.With("component", "classic"),
		out:   make(map[string]chan Message, len(addrs)),
		in:    make(map[net.Conn]struct{}),
		done:  make(chan struct{}),
	}
	for id, a := range addrs {
		t.addrs[id] = a
		t.out[id] = make(chan Message, sendQueueLen)
	}
	return t
}

// Open starts the accept loop and one writer per peer.
func (t *MuxTransport) Open(recv func(string, Message), lost func(string, Message)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.opened {
		return ErrStarted
	}
	t.opened, t.recv, t.lost = true, recv, lost
	for id, q := range t.out {
		t.wg.Add(1)
		go t.write(id, t.addrs[id], q)
	}
	t.wg.Add(1)
	go t.accept()
	return nil
}

// Send queues m for peer to; a full queue or an unknown peer drops it.
func (t *MuxTransport) Send(to string, m Message) {
	q, ok := t.out[to]
	if !ok {
		t.log.Warn("message for unknown peer dropped", "peer", to, "kind", m.Kind)
		return
	}
	select {
	case q <- m:
	default:
		t.log.Debug("send queue full; message dropped", "peer", to, "kind", m.Kind)
	}
}

// Close stops the accept loop, the writers and the readers, and closes the
// layer and every connection.
func (t *MuxTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	conns := make([]net.Conn, 0, len(t.in))
	for c := range t.in {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	err := t.layer.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	t.wg.Wait()
	return err
}

// write sends peer id's queued messages over one connection, redialling
// after a failure.
func (t *MuxTransport) write(id, addr string, q chan Message) {
	defer t.wg.Done()
	var c net.Conn
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	for {
		var m Message
		select {
		case <-t.done:
			return
		case m = <-q:
		}
		if c == nil {
			conn, err := t.layer.Dial(addr, DefaultDialTimeout)
			if err != nil {
				t.log.Debug("dial failed", "peer", id, "err", err)
				t.fail(id, m, q)
				continue
			}
			c = conn
			t.watch(c)
		}
		if err := writeFrame(c, m); err != nil {
			t.log.Debug("write failed", "peer", id, "err", err)
			_ = c.Close()
			c = nil
			t.fail(id, m, q)
		}
	}
}

// fail reports m lost, and every message queued behind it: the peer is
// unreachable now.
func (t *MuxTransport) fail(id string, m Message, q chan Message) {
	t.lost(id, m)
	for {
		select {
		case m := <-q:
			t.lost(id, m)
		default:
			return
		}
	}
}

// watch reads the outgoing connection c, on which the peer never writes,
// so that its end closing closes c at once and the next write fails
// instead of vanishing into a dead socket.
func (t *MuxTransport) watch(c net.Conn) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
	}()
}

func writeFrame(c net.Conn, m Message) error {
	b, err := encodeFrame(m)
	if err != nil {
		return err
	}
	if err := c.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout)); err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// accept hands each incoming connection to a reader.
func (t *MuxTransport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.layer.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || t.isClosed() {
				return
			}
			t.log.Warn("accept failed", "err", err)
			select {
			case <-t.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		id, ok := remoteID(c)
		if !ok || !t.track(c) {
			_ = c.Close()
			continue
		}
		t.wg.Add(1)
		go t.read(id, c)
	}
}

// remoteID returns the node id of the peer at the other end of c.
func remoteID(c net.Conn) (string, bool) {
	r, ok := c.(interface{ RemoteID() string })
	if !ok || r.RemoteID() == "" {
		return "", false
	}
	return r.RemoteID(), true
}

// track records an incoming connection for Close; false once closed.
func (t *MuxTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.in[c] = struct{}{}
	return true
}

func (t *MuxTransport) isClosed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// read delivers the messages peer id sends on c until it fails or closes.
func (t *MuxTransport) read(id string, c net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.in, c)
		t.mu.Unlock()
		_ = c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxFrameLen)
	for sc.Scan() {
		m, err := decodeFrame(sc.Bytes())
		if err != nil {
			t.log.Warn("bad frame; closing connection", "peer", id, "err", err)
			return
		}
		if t.isClosed() {
			return
		}
		t.recv(id, m)
	}
}
