package classic

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/mux"
)

func TestFrame_RoundTrip(t *testing.T) {
	for k := KindHeartbeat; int(k) < numKinds; k++ {
		m := Message{Kind: k, ID: "n3", Initiator: "n1", Epoch: 7, OK: true, Members: []string{"n1", "n3"}}
		b, err := encodeFrame(m)
		if err != nil {
			t.Fatalf("%v: encode: %v", k, err)
		}
		if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
			t.Fatalf("%v: frame %q is not one line", k, b)
		}
		if !bytes.Contains(b, []byte(`"kind":"`+k.String()+`"`)) {
			t.Errorf("%v: frame %q does not name the kind", k, b)
		}
		got, err := decodeFrame(bytes.TrimSuffix(b, []byte("\n")))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("%v: decode = %+v, %v; want %+v", k, got, err, m)
		}
	}
}

func TestFrame_RejectsBadInput(t *testing.T) {
	cases := []struct{ name, line string }{
		{"not json", `election n3`},
		{"unknown kind", `{"kind":"vote","id":"n3"}`},
		{"numeric kind", `{"kind":2}`},
		{"no kind", `{"id":"n3"}`},
		{"unknown field", `{"kind":"election","term":3}`},
		{"two values", `{"kind":"election"} {"kind":"elected"}`},
	}
	for _, tc := range cases {
		if _, err := decodeFrame([]byte(tc.line)); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: %v, want ErrBadFrame", tc.name, err)
		}
	}
	if _, err := encodeFrame(Message{Kind: Kind(99)}); err == nil {
		t.Errorf("encoding an invalid kind succeeded")
	}
	if s := Kind(99).String(); s != "Kind(99)" {
		t.Errorf("Kind(99).String() = %q", s)
	}
}

// TestMuxTransport_BadFrameClosesConnection checks that a peer which sends
// something that is not a message loses its connection, and that a
// well-formed message on a new connection is still delivered, with the
// sender's node id from the mux header.
func TestMuxTransport_BadFrameClosesConnection(t *testing.T) {
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
	got := make(chan string, 4)
	if err := tr.Open(func(from string, m Message) { got <- from + ":" + m.Kind.String() }, func(string, Message) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })

	c, err := la.Dial(b.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "not a message\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := bufio.NewReader(c).ReadByte(); err == nil {
		t.Fatalf("connection still open after a bad frame")
	}

	c2, err := la.Dial(b.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	frame, _ := encodeFrame(Message{Kind: KindElection, ID: "n1"})
	if _, err := c2.Write(frame); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "n1:election" {
			t.Errorf("delivered %q, want n1:election", s)
		}
	case <-time.After(testTimeout):
		t.Fatal("well-formed message not delivered")
	}
	if len(got) != 0 {
		t.Errorf("more was delivered: %q", <-got)
	}
}
