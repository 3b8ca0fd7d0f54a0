package mux

import (
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/certs"
)

// bundle is a CA with node certificates made by certs.Init.
type bundle struct {
	t   *testing.T
	dir string
}

func mustBundle(t *testing.T, hosts []string, ids ...string) bundle {
	t.Helper()
	dir := t.TempDir()
	if _, err := certs.Init(dir, ids, hosts); err != nil {
		t.Fatal(err)
	}
	return bundle{t: t, dir: dir}
}

// peer returns the peer-port TLS configuration of node id.
func (b bundle) peer(id string) *tls.Config {
	b.t.Helper()
	c, k := certs.NodeFiles(id)
	cfg, err := certs.PeerTLS(filepath.Join(b.dir, certs.CAFile), filepath.Join(b.dir, c), filepath.Join(b.dir, k))
	if err != nil {
		b.t.Fatal(err)
	}
	return cfg
}

// mustNewTLSPair is mustNewPair with mutual TLS from one CA.
func mustNewTLSPair(t *testing.T) *pair {
	t.Helper()
	ca := mustBundle(t, []string{"127.0.0.1"}, "a", "b")
	p := &pair{a: mustNewMux(t, "a", WithTLS(ca.peer("a"))), b: mustNewMux(t, "b", WithTLS(ca.peer("b")))}
	p.la, p.lb = p.a.Listen(ProtoRaft), p.b.Listen(ProtoRaft)
	p.a.Faults().SetPeerAddr("b", p.b.Addr().String())
	p.b.Faults().SetPeerAddr("a", p.a.Addr().String())
	return p
}

// deliveries accepts on l until it is closed, counting the connections it
// hands over (and closing them).
func deliveries(l *Layer) *atomic.Int32 {
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n
}

// mustNotDeliver checks, after quiet, that n counted no connection.
func mustNotDeliver(t *testing.T, n *atomic.Int32) {
	t.Helper()
	time.Sleep(quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("%d connections were delivered", got)
	}
}

func TestTLS_CarriesEveryProtocol(t *testing.T) {
	p := mustNewTLSPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	if _, ok := aEnd.Conn.(*tlsConn); !ok {
		t.Fatalf("dialed connection is a %T, not TLS", aEnd.Conn)
	}
	if _, ok := bEnd.Conn.(*tlsConn); !ok {
		t.Fatalf("accepted connection is a %T, not TLS", bEnd.Conn)
	}
	if v := bEnd.Conn.(*tlsConn).ConnectionState().Version; v != tls.VersionTLS13 {
		t.Fatalf("TLS version %x, want 1.3", v)
	}
	if bEnd.RemoteID() != "a" || aEnd.RemoteID() != "b" {
		t.Fatalf("RemoteIDs %q, %q", bEnd.RemoteID(), aEnd.RemoteID())
	}
	mustWrite(t, aEnd, "ping")
	mustRead(t, bEnd, "ping")
	mustWrite(t, bEnd, "pong")
	mustRead(t, aEnd, "pong")

	// A second protocol rides TLS the same way.
	ringA, ringB := p.a.Listen(ProtoRing), p.b.Listen(ProtoRing)
	out := mustDial(t, ringA, p.b.Addr().String())
	in := mustAccept(t, ringB)
	mustWrite(t, out, "ring")
	mustRead(t, in, "ring")
}

func TestTLS_RefusesWhatTheCADidNotSign(t *testing.T) {
	ca := mustBundle(t, []string{"127.0.0.1"}, "a", "b")
	other := mustBundle(t, []string{"127.0.0.1"}, "a", "b", "x")
	// A plain header is shorter than a TLS record's: a waits for the rest
	// until its header timeout.
	a := mustNewMux(t, "a", WithTLS(ca.peer("a")), WithHeaderTimeout(time.Second))
	la := deliveries(a.Listen(ProtoRaft))
	addr := a.Addr().String()

	t.Run("plain dialer", func(t *testing.T) {
		plain := mustNewMux(t, "b")
		c, err := plain.Listen(ProtoRaft).Dial(addr, testTimeout)
		if err != nil {
			t.Fatalf("a plain dial fails only at the far end, got %v", err)
		}
		defer c.Close()
		mustBeClosed(t, c)
		mustNotDeliver(t, la)
	})
	t.Run("another CA's certificate", func(t *testing.T) {
		for _, id := range []string{"b", "x"} {
			foreign := mustNewMux(t, id, WithTLS(other.peer(id)))
			if _, err := foreign.Listen(ProtoRaft).Dial(addr, testTimeout); err == nil {
				t.Fatalf("%s: a dial that trusts another CA verified a's certificate", id)
			}
			mustNotDeliver(t, la)
		}
	})
	t.Run("another CA's certificate, trusting ours", func(t *testing.T) {
		// The dialer trusts the cluster's CA (so it gets past verifying a)
		// but holds a certificate of another: a must refuse it.
		cfg := other.peer("b")
		cfg.RootCAs = ca.peer("b").RootCAs
		foreign := mustNewMux(t, "b", WithTLS(cfg))
		c, err := foreign.Listen(ProtoRaft).Dial(addr, testTimeout)
		if err == nil {
			defer c.Close()
			mustBeClosed(t, c)
		}
		mustNotDeliver(t, la)
	})
	t.Run("no client certificate", func(t *testing.T) {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		tc := tls.Client(raw, &tls.Config{RootCAs: ca.peer("b").RootCAs, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13})
		_ = tc.SetDeadline(time.Now().Add(testTimeout))
		if err := tc.Handshake(); err == nil {
			_, _ = tc.Write([]byte{ProtoRaft, headerVersion, 1, 'b'})
			if _, err := tc.Read(make([]byte, 1)); err == nil {
				t.Fatal("a connection without a client certificate was answered")
			}
		}
		mustNotDeliver(t, la)
	})
	t.Run("plain bytes of every protocol", func(t *testing.T) {
		for _, proto := range []byte{ProtoRaft, ProtoRing, ProtoBully, ProtoInvitation, ProtoLease, ProtoForward} {
			raw, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, raw, string([]byte{proto, headerVersion, 1, 'b'})+"payload")
			mustBeClosed(t, raw)
			raw.Close()
		}
		mustNotDeliver(t, la)
	})
	t.Run("a TLS dialer to a plain node", func(t *testing.T) {
		plain := mustNewMux(t, "p")
		plain.Listen(ProtoRaft)
		if _, err := mustNewMux(t, "b", WithTLS(ca.peer("b"))).Listen(ProtoRaft).Dial(plain.Addr().String(), time.Second); err == nil {
			t.Fatal("a TLS dial to a plain node succeeded")
		}
	})
}

func TestTLS_NodeIDMustBeTheCertificates(t *testing.T) {
	ca := mustBundle(t, []string{"127.0.0.1"}, "a", "b")
	a := mustNewMux(t, "a", WithTLS(ca.peer("a")))
	l := a.Listen(ProtoRaft)
	delivered := deliveries(l)
	// b's certificate, announcing itself as a third node.
	liar := mustNewMux(t, "c", WithTLS(ca.peer("b")))
	c, err := liar.Listen(ProtoRaft).Dial(a.Addr().String(), testTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	mustBeClosed(t, c)
	mustNotDeliver(t, delivered)
	// The certificate's own name is let in.
	_ = l.Close()
	l = a.Listen(ProtoRaft)
	honest := mustNewMux(t, "b", WithTLS(ca.peer("b")))
	mustDial(t, honest.Listen(ProtoRaft), a.Addr().String())
	if got := mustAccept(t, l).RemoteID(); got != "b" {
		t.Fatalf("RemoteID %q", got)
	}
}

func TestTLS_DialChecksTheHost(t *testing.T) {
	ca := mustBundle(t, []string{"127.0.0.1"}, "a", "b")
	a := mustNewMux(t, "a", WithTLS(ca.peer("a")))
	a.Listen(ProtoRaft)
	_, port, _ := net.SplitHostPort(a.Addr().String())
	b := mustNewMux(t, "b", WithTLS(ca.peer("b")))
	_, err := b.Listen(ProtoRaft).Dial(net.JoinHostPort("localhost", port), testTimeout)
	if err == nil || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("dial by a name the certificate does not carry: %v", err)
	}
}

func TestTLS_SlowOrGarbageHandshakeIsCut(t *testing.T) {
	const headerTimeout = 150 * time.Millisecond
	ca := mustBundle(t, []string{"127.0.0.1"}, "a")
	m := mustNewMux(t, "a", WithTLS(ca.peer("a")), WithHeaderTimeout(headerTimeout))
	m.Listen(ProtoRaft)
	for _, tc := range []struct {
		name string
		send string
	}{
		{"silent", ""},
		{"a TLS record header, then nothing", "\x16\x03\x01\x02\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			if tc.send != "" {
				mustWrite(t, c, tc.send)
			}
			mustBeClosed(t, c)
			if elapsed := time.Since(start); elapsed < headerTimeout/2 {
				t.Fatalf("closed after %v, before the header timeout", elapsed)
			}
		})
	}
	waitFor(t, "no connection pending", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.pending) == 0
	})
}

func TestTLS_FaultRulesCutTLSConnections(t *testing.T) {
	p := mustNewTLSPair(t)

	// Blackhole: bytes inside TLS are lost, the connection stays up.
	aEnd, bEnd := p.mustConnectAB(t)
	p.a.Faults().Set("b", Out, Blackhole)
	mustWrite(t, aEnd, "lost")
	mustReadNothing(t, bEnd)
	p.a.Faults().Heal("b")
	mustWrite(t, aEnd, "ok")
	mustRead(t, bEnd, "ok")

	// Delay holds the bytes and delivers them in order.
	p.a.Faults().SetDelay("b", Out, 100*time.Millisecond)
	start := time.Now()
	mustWrite(t, aEnd, "late")
	mustRead(t, bEnd, "late")
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("delayed bytes arrived after %v", d)
	}
	p.a.Faults().Heal("b")

	// Drop resets every open TLS connection with the peer, both ways,
	// and refuses new dials; healing lets them through again.
	baA, baB := p.mustConnectBA(t)
	p.a.Faults().Set("b", Both, Drop)
	for _, c := range []*Conn{aEnd, bEnd, baA, baB} {
		mustBeClosed(t, c)
	}
	if _, err := p.la.Dial(p.b.Addr().String(), testTimeout); !errors.Is(err, ErrDropped) {
		t.Fatalf("dial under Drop: %v", err)
	}
	refused := mustDial(t, p.lb, p.a.Addr().String())
	mustBeClosed(t, refused)
	waitFor(t, "a to count the refused accept", func() bool { return p.a.Faults().Refused()["b"].Accepts == 1 })
	p.a.Faults().Heal("b")
	aEnd, bEnd = p.mustConnectAB(t)
	mustWrite(t, aEnd, "healed")
	mustRead(t, bEnd, "healed")
}

func TestTLS_VerifyPeer(t *testing.T) {
	ca := mustBundle(t, []string{"127.0.0.1"}, "a", "b")
	other := mustBundle(t, []string{"127.0.0.1"}, "b")
	a := mustNewMux(t, "a", WithTLS(ca.peer("a")))
	b := mustNewMux(t, "b", WithTLS(ca.peer("b")))
	foreign := mustNewMux(t, "b", WithTLS(other.peer("b")))
	plain := mustNewMux(t, "b")
	if err := a.VerifyPeer(b.Addr().String(), "b", testTimeout); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := a.VerifyPeer(b.Addr().String(), "c", testTimeout); !errors.Is(err, errPeerName) {
		t.Fatalf("b's certificate taken for c: %v", err)
	}
	if err := a.VerifyPeer(foreign.Addr().String(), "b", testTimeout); err == nil {
		t.Fatal("another CA's node verified")
	}
	if err := a.VerifyPeer(plain.Addr().String(), "b", time.Second); err == nil {
		t.Fatal("a plain node verified")
	}
	a.Faults().SetPeerAddr("b", b.Addr().String())
	a.Faults().Set("b", Out, Drop)
	if err := a.VerifyPeer(b.Addr().String(), "b", testTimeout); !errors.Is(err, ErrDropped) {
		t.Fatalf("VerifyPeer under Drop: %v", err)
	}
}
