package peerhttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"
)

// Transport is an http.RoundTripper that carries a request to the node
// whose peer address is the request URL's host (host:port), over that
// node's peer port. Requests to one node share one connection, each with
// its own number, so many are in flight at once and none waits for
// another's answer.
//
// The request is handed to the connection in one piece (its body is read
// first). Whether the other node may have seen it is what the caller
// needs to know when no answer comes, and Transport says it the way
// net/http does: the ClientTrace's GotConn hook is called once the request
// is queued on a live connection, never before. An error before that
// means the request was not sent.
type Transport struct {
	// Dial opens a connection to a peer address (a mux layer's Dial).
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// DialTimeout bounds a dial. Zero means 5 s.
	DialTimeout time.Duration

	mu    sync.Mutex
	conns map[string]*clientConn
}

// clientConn is a forwarding connection's dialing end.
type clientConn struct {
	*conn
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan frame
	ended   bool // readLoop has failed every pending request
}

// RoundTrip sends req and waits for its answer, the request's context to
// end, or the connection to fail. A request whose context ends is
// cancelled on the other node too.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	peer := req.URL.Host
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxFrame/2+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(b) > MaxFrame/2 {
			return nil, fmt.Errorf("peerhttp: request body over %d bytes", MaxFrame/2)
		}
		body = b
	}
	ctx := req.Context()
	c, err := t.conn(peer)
	if err != nil {
		return nil, err
	}
	id, ch, ok := c.register()
	if !ok {
		return nil, c.closedErr()
	}
	f := frame{kind: kindRequest, id: id, method: req.Method, uri: req.URL.RequestURI(), header: req.Header, body: body}
	if !c.send(f.encode()) {
		c.unregister(id)
		return nil, c.closedErr()
	}
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.c, Reused: true})
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, c.closedErr()
		}
		return response(req, resp), nil
	case <-ctx.Done():
		c.unregister(id)
		cancel := frame{kind: kindCancel, id: id}
		c.send(cancel.encode())
		return nil, ctx.Err()
	}
}

// response builds the http.Response for an answer frame.
func response(req *http.Request, f frame) *http.Response {
	return &http.Response{
		Status:        strconv.Itoa(f.status) + " " + http.StatusText(f.status),
		StatusCode:    f.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        f.header,
		Body:          io.NopCloser(bytes.NewReader(f.body)),
		ContentLength: int64(len(f.body)),
		Request:       req,
	}
}

// conn returns the live connection to peer, dialing one if there is none.
func (t *Transport) conn(peer string) (*clientConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.conns[peer]; c != nil {
		select {
		case <-c.done:
		default:
			return c, nil
		}
	}
	timeout := t.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	raw, err := t.Dial(peer, timeout)
	if err != nil {
		return nil, err
	}
	c := &clientConn{conn: newConn(raw), pending: make(map[uint64]chan frame)}
	if t.conns == nil {
		t.conns = make(map[string]*clientConn)
	}
	t.conns[peer] = c
	go c.readLoop()
	return c, nil
}

// CloseIdleConnections closes every connection; requests in flight on
// them fail.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for peer, c := range t.conns {
		c.fail(net.ErrClosed)
		delete(t.conns, peer)
	}
}

// register numbers a new request; false once the connection has ended.
func (c *clientConn) register() (uint64, chan frame, bool) {
	ch := make(chan frame, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return 0, nil, false
	}
	c.next++
	c.pending[c.next] = ch
	return c.next, ch, true
}

func (c *clientConn) unregister(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// readLoop delivers answers until the connection fails, then fails every
// request still waiting.
func (c *clientConn) readLoop() {
	r := bufio.NewReaderSize(c.c, 64<<10)
	for {
		f, err := readFrame(r)
		if err == nil && f.kind != kindResponse {
			err = fmt.Errorf("%w: kind %d from the answering node", errFrame, f.kind)
		}
		if err != nil {
			c.fail(err)
			c.mu.Lock()
			c.ended = true
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		ch := c.pending[f.id]
		delete(c.pending, f.id)
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
}

// closedErr says why the connection ended.
func (c *clientConn) closedErr() error {
	<-c.done
	if errors.Is(c.err, io.EOF) {
		return fmt.Errorf("peerhttp: connection to %s closed", c.c.RemoteAddr())
	}
	return fmt.Errorf("peerhttp: connection to %s: %w", c.c.RemoteAddr(), c.err)
}
