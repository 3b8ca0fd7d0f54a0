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
//
// With an address to advertise (Advertise), the nodes also tell each other
// their HTTP addresses: every connection a node dials starts with a Hello
// carrying its own, and a node that receives the first Hello of a
// connection answers with a Hello of its own on its connection the other
// way (dialling it if need be), so that a peer that restarted learns it
// again. At Open a node says hello to every peer it can reach. A coordinator
// sends heartbeats to every member, so every member learns the
// coordinator's address, and the coordinator every member's, within a
// heartbeat of the connection. Hellos never reach the algorithm and are
// not counted in its Stats.
type MuxTransport struct {
	layer Layer
	addrs map[string]string // peer id -> mux address
	log   *slog.Logger

	selfID    string                   // this node's id, for its Hellos
	advertise string                   // this node's HTTP address; "" sends no Hello
	hello     map[string]chan struct{} // peer id -> ask its writer for a Hello

	mu     sync.Mutex
	opened bool
	closed bool
	http   map[string]string // peer id -> HTTP address it told
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
		hello: make(map[string]chan struct{}, len(addrs)),
		http:  make(map[string]string, len(addrs)),
		out:   make(map[string]chan Message, len(addrs)),
		in:    make(map[net.Conn]struct{}),
		done:  make(chan struct{}),
	}
	for id, a := range addrs {
		t.addrs[id] = a
		t.out[id] = make(chan Message, sendQueueLen)
		t.hello[id] = make(chan struct{}, 1)
	}
	return t
}

// Advertise sets this node's id and the HTTP address it tells its peers
// (see MuxTransport). Call it before Open; without it the node tells
// nothing, and learns only what peers tell it.
func (t *MuxTransport) Advertise(self, httpAddr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.selfID, t.advertise = self, httpAddr
}

// PeerHTTP returns the HTTP address peer id told this node, "" if it has
// told none yet.
func (t *MuxTransport) PeerHTTP(id string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.http[id]
}

// sayHello asks the writer to peer id to send a Hello, unless one is asked
// for already.
func (t *MuxTransport) sayHello(id string) {
	if ch, ok := t.hello[id]; ok && t.advertise != "" && id != t.selfID {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
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
		t.sayHello(id)
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
// after a failure, and the Hellos asked for.
func (t *MuxTransport) write(id, addr string, q chan Message) {
	defer t.wg.Done()
	var c net.Conn
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	t.mu.Lock()
	hello := Message{Kind: KindHello, ID: t.selfID, HTTP: t.advertise}
	t.mu.Unlock()
	for {
		var m Message
		select {
		case <-t.done:
			return
		case m = <-q:
		case <-t.hello[id]:
			if c != nil {
				if err := writeFrame(c, hello); err == nil {
					continue
				}
				_ = c.Close()
				c = nil
			}
			c = t.dial(id, addr, hello)
			continue
		}
		if c == nil {
			if c = t.dial(id, addr, hello); c == nil {
				t.fail(id, m, q)
				continue
			}
		}
		if err := writeFrame(c, m); err != nil {
			t.log.Debug("write failed", "peer", id, "err", err)
			_ = c.Close()
			c = nil
			t.fail(id, m, q)
		}
	}
}

// dial opens a connection to peer id and, with an address to advertise,
// says hello on it first. It returns nil on failure.
func (t *MuxTransport) dial(id, addr string, hello Message) net.Conn {
	c, err := t.layer.Dial(addr, DefaultDialTimeout)
	if err != nil {
		t.log.Debug("dial failed", "peer", id, "err", err)
		return nil
	}
	t.watch(c)
	if hello.HTTP != "" {
		if err := writeFrame(c, hello); err != nil {
			t.log.Debug("write failed", "peer", id, "err", err)
			_ = c.Close()
			return nil
		}
	}
	return c
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

// heard records the HTTP address in a Hello from peer id, and answers the
// first Hello of a connection with one of this node's own: the peer dialled
// anew, and may have restarted and forgotten this node's address.
func (t *MuxTransport) heard(id string, m Message, first bool) {
	if m.ID != id || m.HTTP == "" {
		t.log.Debug("hello ignored", "peer", id, "id", m.ID, "http", m.HTTP)
		return
	}
	t.mu.Lock()
	old := t.http[id]
	t.http[id] = m.HTTP
	t.mu.Unlock()
	if old != m.HTTP {
		t.log.Debug("peer's HTTP address learned", "peer", id, "http", m.HTTP)
	}
	if first {
		t.sayHello(id)
	}
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
	first := true
	for sc.Scan() {
		m, err := decodeFrame(sc.Bytes())
		if err != nil {
			t.log.Warn("bad frame; closing connection", "peer", id, "err", err)
			return
		}
		if t.isClosed() {
			return
		}
		if m.Kind == KindHello {
			t.heard(id, m, first)
			first = false
			continue
		}
		first = false
		t.recv(id, m)
	}
}
