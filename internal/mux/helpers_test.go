package mux

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	// testTimeout bounds anything a test expects to happen.
	testTimeout = 5 * time.Second
	// quiet is how long a test watches for something that must not happen.
	quiet = 200 * time.Millisecond
)

// testLogger logs at debug level to the test's output, shown on failure.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// mustNewMux starts a Mux for node id on 127.0.0.1 with a port from the OS,
// and closes it when the test ends, checking that Serve returned ErrClosed.
func mustNewMux(t *testing.T, id string, opts ...Option) *Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	m := New(ln, id, testLogger(t), opts...)
	served := make(chan error, 1)
	go func() { served <- m.Serve() }()
	t.Cleanup(func() {
		_ = m.Close()
		select {
		case err := <-served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve returned %v, want ErrClosed", err)
			}
		case <-time.After(testTimeout):
			t.Errorf("Serve did not return after Close")
		}
	})
	return m
}

// pair is two nodes, "a" and "b", that know each other's address, each
// with a Raft layer.
type pair struct {
	a, b   *Mux
	la, lb *Layer
}

func mustNewPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{a: mustNewMux(t, "a"), b: mustNewMux(t, "b")}
	p.la, p.lb = p.a.Listen(ProtoRaft), p.b.Listen(ProtoRaft)
	p.a.Faults().SetPeerAddr("b", p.b.Addr().String())
	p.b.Faults().SetPeerAddr("a", p.a.Addr().String())
	return p
}

// mustConnectAB dials from a to b and returns both ends: a's and b's.
func (p *pair) mustConnectAB(t *testing.T) (aEnd, bEnd *Conn) {
	t.Helper()
	return mustDial(t, p.la, p.b.Addr().String()), mustAccept(t, p.lb)
}

// mustConnectBA dials from b to a and returns both ends: a's and b's.
func (p *pair) mustConnectBA(t *testing.T) (aEnd, bEnd *Conn) {
	t.Helper()
	bEnd = mustDial(t, p.lb, p.a.Addr().String())
	return mustAccept(t, p.la), bEnd
}

func mustDial(t *testing.T, l *Layer, addr string) *Conn {
	t.Helper()
	c, err := l.Dial(addr, testTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*Conn)
}

// mustAccept waits, within testTimeout, for l to accept a connection.
func mustAccept(t *testing.T, l *Layer) *Conn {
	t.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("accept: %v", r.err)
		}
		t.Cleanup(func() { _ = r.c.Close() })
		return r.c.(*Conn)
	case <-time.After(testTimeout):
		t.Fatalf("accept: nothing within %v", testTimeout)
		return nil
	}
}

func mustWrite(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if err := c.SetWriteDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatalf("set write deadline: %v", err)
	}
	if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("write %q: n=%d err=%v", s, n, err)
	}
}

// mustRead reads exactly len(want) bytes within testTimeout and compares.
func mustRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatalf("set read deadline: %v", err)
	}
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read %q: %v", want, err)
	}
	if string(buf) != want {
		t.Fatalf("read %q, want %q", buf, want)
	}
}

// mustReadNothing checks that a read on c times out after quiet, with the
// timeout error a real connection gives.
func mustReadNothing(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(quiet)); err != nil {
		t.Fatalf("set read deadline: %v", err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if !isTimeout(err) {
		t.Fatalf("read: got %q, %v; want a timeout", buf[:n], err)
	}
}

// mustBeClosed checks that a read on c fails, within testTimeout, with an
// error other than a timeout (EOF, reset or use of a closed connection).
func mustBeClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(testTimeout)); err != nil &&
		!errors.Is(err, net.ErrClosed) {
		t.Fatalf("set read deadline: %v", err)
	}
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if err == nil {
			continue // data sent before the close; drain it
		}
		if isTimeout(err) {
			t.Fatalf("connection still open after %v (last read %q)", testTimeout, buf[:n])
		}
		return
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitFor polls cond until it holds or testTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitBlockedIn waits until some goroutine other than the caller is parked
// (not running) with fn on its stack, e.g. a Read waiting for bytes.
func waitBlockedIn(t *testing.T, fn string) {
	t.Helper()
	waitFor(t, "a goroutine to block in "+fn, func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && !strings.Contains(header, "[running]") &&
				!strings.Contains(header, "[runnable]") {
				return true
			}
		}
		return false
	})
}

// readChunks reads c in a goroutine until it fails, sending each read's
// bytes, then the error, on the returned channels.
func readChunks(c net.Conn) (<-chan string, <-chan error) {
	data, failed := make(chan string, 64), make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				data <- string(buf[:n])
			}
			if err != nil {
				failed <- err
				return
			}
		}
	}()
	return data, failed
}

// mustReceive waits, within testTimeout, for the next string on ch and
// compares.
func mustReceive(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("received %q, want %q", got, want)
		}
	case <-time.After(testTimeout):
		t.Fatalf("received nothing within %v, want %q", testTimeout, want)
	}
}
