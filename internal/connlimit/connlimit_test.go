package connlimit

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"
)

// dialFrom connects to l from the local IP from.
func dialFrom(t *testing.T, l net.Listener, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func listen(t *testing.T, lim Limits, opts ...Option) *Listener {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, lim, opts...)
	t.Cleanup(func() { l.Close() })
	return l
}

// accept returns the next connection l hands on.
func accept(t *testing.T, l *Listener) *Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := l.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { r.c.Close() })
		return r.c.(*Conn)
	case <-time.After(5 * time.Second):
		t.Fatal("no connection handed on")
		return nil
	}
}

// closedByNode reports whether the node closed c (a read ends in EOF or a
// reset rather than a timeout).
func closedByNode(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestListener_PerClientLimitClosesTheRest(t *testing.T) {
	var overs []Reason
	l := listen(t, Limits{PerClient: 2}, OnOver(func(r Reason, _ net.Addr, open int) {
		if open != 2 {
			t.Errorf("a refusal counted %d open, want 2", open)
		}
		overs = append(overs, r)
	}))
	a1, a2 := dialFrom(t, l, "127.0.0.2"), dialFrom(t, l, "127.0.0.2")
	_, _ = a1, a2
	c1, c2 := accept(t, l), accept(t, l)
	if c1.Over() != "" || c2.Over() != "" {
		t.Fatal("connections within the limit marked over it")
	}
	a3 := dialFrom(t, l, "127.0.0.2")
	b := dialFrom(t, l, "127.0.0.3") // another address is counted apart
	if cb := accept(t, l); cb.Over() != "" {
		t.Fatal("another address's connection refused")
	}
	_ = b
	if !closedByNode(a3) {
		t.Fatal("the connection past the per-client limit was not closed")
	}
	if l.Open() != 3 || l.Refused(OverPerClient) != 1 || len(overs) != 1 || overs[0] != OverPerClient {
		t.Fatalf("open %d, refused %d, reported %v; want 3, 1, [per_client]", l.Open(), l.Refused(OverPerClient), overs)
	}
	// Closing one makes room for the next.
	_ = c1.Close()
	_ = c1.Close() // counted out once
	if l.Open() != 2 {
		t.Fatalf("open %d after a close, want 2", l.Open())
	}
	dialFrom(t, l, "127.0.0.2")
	if c := accept(t, l); c.Over() != "" {
		t.Fatal("a connection refused after another was closed")
	}
}

func TestListener_AnswerOverHandsOnMarkedWithinDeadline(t *testing.T) {
	l := listen(t, Limits{Total: 1}, AnswerOver())
	dialFrom(t, l, "127.0.0.2")
	if c := accept(t, l); c.Over() != "" {
		t.Fatal("the first connection is over the total")
	}
	dialFrom(t, l, "127.0.0.3")
	over := accept(t, l)
	if over.Over() != OverTotal || l.Refused(OverTotal) != 1 {
		t.Fatalf("past the total: marked %q, refused %d; want total, 1", over.Over(), l.Refused(OverTotal))
	}
	// The server cannot move its deadline past OverDeadline, nor clear it.
	if err := over.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := over.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read on an over connection with its deadline cleared: %v, want a timeout", err)
	}
	if waited := time.Since(start); waited > OverDeadline+5*time.Second {
		t.Fatalf("an over connection's read ran %v", waited)
	}
	if l.Open() != 1 {
		t.Fatalf("open %d: an over connection was counted", l.Open())
	}
	_ = over.Close()
	if l.over != 0 {
		t.Fatalf("%d over connections after closing the only one", l.over)
	}
}

func TestListener_AtMostMaxOverHandedOn(t *testing.T) {
	l := listen(t, Limits{PerClient: 1}, AnswerOver())
	dialFrom(t, l, "127.0.0.2")
	accept(t, l)
	for range MaxOver {
		dialFrom(t, l, "127.0.0.2")
		if c := accept(t, l); c.Over() != OverPerClient {
			t.Fatal("a connection past the limit was not marked")
		}
	}
	late := dialFrom(t, l, "127.0.0.2")
	go func() { // the server's accept loop: it closes late and waits for the next
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	if !closedByNode(late) {
		t.Fatal("a connection past MaxOver was not closed at once")
	}
}

func TestWithConn_FindsTheConnUnderTLS(t *testing.T) {
	l := listen(t, Limits{Total: 1}, AnswerOver())
	dialFrom(t, l, "127.0.0.2")
	accept(t, l)
	dialFrom(t, l, "127.0.0.2")
	over := accept(t, l)
	ctx := WithConn(context.Background(), tls.Server(over, &tls.Config{}))
	if OverOf(ctx) != OverTotal {
		t.Fatalf("OverOf through a *tls.Conn = %q, want total", OverOf(ctx))
	}
	if OverOf(context.Background()) != "" {
		t.Fatal("OverOf without a connection is not empty")
	}
}
