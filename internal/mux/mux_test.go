package mux

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"
)

func TestMux_RoutesByProtocol(t *testing.T) {
	a, b := mustNewMux(t, "a"), mustNewMux(t, "b")
	aRaft, aRing := a.Listen(ProtoRaft), a.Listen(ProtoRing)
	bRaft, bRing := b.Listen(ProtoRaft), b.Listen(ProtoRing)
	b.Faults().SetPeerAddr("a", a.Addr().String())

	// Dial the ring layer first, so that a mix-up would hand the raft
	// layer the wrong connection.
	ringOut := mustDial(t, bRing, a.Addr().String())
	mustWrite(t, ringOut, "ring")
	raftOut := mustDial(t, bRaft, a.Addr().String())
	mustWrite(t, raftOut, "raft")

	for _, tc := range []struct {
		name string
		l    *Layer
		out  *Conn
	}{
		{"raft", aRaft, raftOut},
		{"ring", aRing, ringOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := mustAccept(t, tc.l)
			mustRead(t, in, tc.name)
			if got := in.RemoteID(); got != "b" {
				t.Errorf("accepted RemoteID = %q, want %q", got, "b")
			}
			if got := tc.out.RemoteID(); got != "a" {
				t.Errorf("dialed RemoteID = %q, want %q (registered address)", got, "a")
			}
		})
	}
}

func TestMux_DialUnregisteredAddr_AttributedToAddr(t *testing.T) {
	a, b := mustNewMux(t, "a"), mustNewMux(t, "b")
	la := a.Listen(ProtoRaft)
	b.Listen(ProtoRaft)
	addr := b.Addr().String()
	if got := mustDial(t, la, addr).RemoteID(); got != addr {
		t.Errorf("RemoteID = %q, want the address %q", got, addr)
	}
}

func TestMux_RefusesBadConnections(t *testing.T) {
	const headerTimeout = 100 * time.Millisecond
	m := mustNewMux(t, "a", WithHeaderTimeout(headerTimeout))
	m.Listen(ProtoRaft)

	for _, tc := range []struct {
		name   string
		send   []byte
		silent bool // closed by the header timeout, not at once
	}{
		{name: "unknown protocol byte", send: []byte{99, headerVersion, 1, 'x'}},
		{name: "bad version", send: []byte{ProtoRaft, 9, 1, 'x'}},
		{name: "empty node ID", send: []byte{ProtoRaft, headerVersion, 0}},
		{name: "silent", silent: true},
		{name: "truncated header", send: []byte{ProtoRaft, headerVersion, 5, 'x'}, silent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			start := time.Now()
			if len(tc.send) > 0 {
				mustWrite(t, c, string(tc.send))
			}
			mustBeClosed(t, c)
			if elapsed := time.Since(start); tc.silent && elapsed < headerTimeout/2 {
				t.Errorf("closed after %v, before the header timeout of %v", elapsed, headerTimeout)
			}
		})
	}
}

func TestMux_Listen_TwicePanics(t *testing.T) {
	m := mustNewMux(t, "a")
	l := m.Listen(ProtoRaft)
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("second Listen(ProtoRaft) did not panic")
			}
		}()
		m.Listen(ProtoRaft)
	}()

	// Once closed, the byte is free again and the new Layer gets the
	// connections.
	_ = l.Close()
	l2 := m.Listen(ProtoRaft)
	b := mustNewMux(t, "b")
	mustDial(t, b.Listen(ProtoRaft), m.Addr().String())
	if got := mustAccept(t, l2).RemoteID(); got != "b" {
		t.Errorf("RemoteID = %q, want b", got)
	}
}

func TestMux_Dial_BadNodeID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	m := New(ln, "", nil)
	defer func() { _ = m.Close() }()
	if _, err := m.Listen(ProtoRaft).Dial(ln.Addr().String(), time.Second); !errors.Is(err, ErrBadNodeID) {
		t.Errorf("Dial with empty node ID: %v, want ErrBadNodeID", err)
	}
}

func TestMux_Close_StopsEverything(t *testing.T) {
	baseline := runtime.NumGoroutine()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	a := New(ln, "a", testLogger(t), WithHeaderTimeout(time.Minute))
	served := make(chan error, 1)
	go func() { served <- a.Serve() }()
	la := a.Listen(ProtoRaft)
	a.Listen(ProtoRing) // never accepted from: its connections wait in deliver
	b := mustNewMux(t, "b")
	lb, lbRing := b.Listen(ProtoRaft), b.Listen(ProtoRing)

	// An accepted connection, a few waiting to be accepted, a few silent
	// ones stuck in the header phase, and one a dialed out.
	accepted := mustDial(t, lb, a.Addr().String())
	mustAccept(t, la)
	var others []net.Conn
	for range 3 {
		others = append(others, mustDial(t, lbRing, a.Addr().String()))
		raw, err := net.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer raw.Close()
		others = append(others, raw)
	}
	dialed := mustDial(t, la, b.Addr().String())
	inB := mustAccept(t, lb)

	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Serve did not return after Close")
	}
	if _, err := la.Accept(); !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want ErrClosed matching net.ErrClosed", err)
	}
	if _, err := la.Dial(b.Addr().String(), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close: %v, want ErrClosed", err)
	}
	mustBeClosed(t, accepted)
	mustBeClosed(t, inB)
	mustBeClosed(t, dialed)
	for _, c := range others {
		mustBeClosed(t, c)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// b and the test's connections go too; then no goroutine of a's or
	// b's may be left.
	_ = b.Close()
	for _, c := range append(others, accepted, inB, dialed) {
		_ = c.Close()
	}
	deadline := time.Now().Add(testTimeout)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, baseline %d\n%s", runtime.NumGoroutine(), baseline,
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDial_FromLoopbackListenAddress checks that a node listening on a
// loopback address dials loopback peers from it, so that nodes on
// 127.0.0.x are told apart by source address, and that anything else is
// left to the kernel.
func TestDial_FromLoopbackListenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	a := New(ln, "a", testLogger(t))
	go func() { _ = a.Serve() }()
	t.Cleanup(func() { _ = a.Close() })
	b := mustNewMux(t, "b")
	lb := b.Listen(ProtoRaft)
	c := mustDial(t, a.Listen(ProtoRaft), b.Addr().String())
	defer func() { _ = c.Close() }()
	got := mustAccept(t, lb)
	defer func() { _ = got.Close() }()
	if ip := got.RemoteAddr().(*net.TCPAddr).IP.String(); ip != "127.0.0.2" {
		t.Errorf("b sees a's connection from %s, want 127.0.0.2", ip)
	}

	for _, tt := range []struct {
		local, addr string
		want        string // "" for nil
	}{
		{"127.0.0.2:1", "127.0.0.3:2", "127.0.0.2:0"},
		{"127.0.0.2:1", "localhost:2", ""}, // not an IP: the kernel chooses
		{"127.0.0.2:1", "10.0.0.1:2", ""},
		{"0.0.0.0:1", "127.0.0.3:2", ""},
		{"10.0.0.1:1", "10.0.0.2:2", ""},
		{"127.0.0.2:1", "[::1]:2", ""},
		{"127.0.0.1:1", "127.0.0.3:2", ""}, // the kernel's choice anyway
		{"[::1]:1", "[::1]:2", ""},
	} {
		local, _ := net.ResolveTCPAddr("tcp", tt.local)
		got := loopbackSource(local, tt.addr)
		if (got == nil && tt.want != "") || (got != nil && got.String() != tt.want) {
			t.Errorf("loopbackSource(%s, %s) = %v, want %q", tt.local, tt.addr, got, tt.want)
		}
	}
}
