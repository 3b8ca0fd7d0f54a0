package classic

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/mux"
)

// Nodes tell each other their HTTP addresses over the peer port: a
// transport says hello to every peer when it opens, learns the address in
// a peer's hello, answers the first hello of a connection with its own
// (the peer may have restarted and forgotten it), and never hands a hello
// to the algorithm.
func TestMuxTransport_HelloTellsHTTPAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	newMux := func(id string) *mux.Mux {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m := mux.New(ln, id, nil)
		go func() { _ = m.Serve() }()
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	a, b := newMux("n1"), newMux("n2")
	la := a.Listen(mux.ProtoBully)
	tr := NewMuxTransport(b.Listen(mux.ProtoBully), map[string]string{"n1": a.Addr().String()}, nil)
	tr.Advertise("n2", "http://n2.example:7400")
	delivered := make(chan Message, 4)
	if err := tr.Open(func(_ string, m Message) { delivered <- m }, func(string, Message) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })

	// The hello n2 says when it opens.
	in, err := acceptWithin(la, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r := bufio.NewReader(in)
	readHello := func(when string) {
		t.Helper()
		_ = in.SetReadDeadline(time.Now().Add(testTimeout))
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: no hello from n2: %v", when, err)
		}
		m, err := decodeFrame(line[:len(line)-1])
		if err != nil || m.Kind != KindHello || m.ID != "n2" || m.HTTP != "http://n2.example:7400" {
			t.Fatalf("%s: got %+v (%v), want n2's hello with its HTTP address", when, m, err)
		}
	}
	readHello("at open")
	if got := tr.PeerHTTP("n1"); got != "" {
		t.Fatalf("n1's address known before n1 said anything: %q", got)
	}

	// n1 dials n2 (as after a restart) and says hello first: n2 learns
	// its address and answers with its own on its connection to n1.
	out, err := la.Dial(b.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, m := range []Message{{Kind: KindHello, ID: "n1", HTTP: "https://n1.example:7400"}, {Kind: KindElection, ID: "n1"}} {
		frame, _ := encodeFrame(m)
		if _, err := out.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	readHello("after n1's hello")
	select {
	case m := <-delivered:
		if m.Kind != KindElection {
			t.Fatalf("the algorithm got %v, want only the election message", m.Kind)
		}
	case <-time.After(testTimeout):
		t.Fatal("election message not delivered")
	}
	if got := tr.PeerHTTP("n1"); got != "https://n1.example:7400" {
		t.Fatalf("n1's address: %q", got)
	}
	if len(delivered) != 0 {
		t.Fatalf("more delivered: %+v", <-delivered)
	}
	// A hello naming another node than the connection's is ignored.
	frame, _ := encodeFrame(Message{Kind: KindHello, ID: "n3", HTTP: "http://evil:1"})
	if _, err := out.Write(frame); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := tr.PeerHTTP("n1"); got != "https://n1.example:7400" || tr.PeerHTTP("n3") != "" {
		t.Fatalf("after a hello for another id: n1 %q, n3 %q", got, tr.PeerHTTP("n3"))
	}
}

func acceptWithin(l *mux.Layer, d time.Duration) (net.Conn, error) {
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := l.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-time.After(d):
		_ = l.Close()
		return nil, net.ErrClosed
	}
}
