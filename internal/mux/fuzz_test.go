package mux

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fuzz target of the connection header. `go test` runs it on its seeds
// (the f.Add calls and testdata/fuzz/FuzzHeader); docs/harness.md,
// "Fuzzing", says how to fuzz it.

// fuzzShortTimeout is the header timeout of the Mux FuzzHeader reads a
// header that never completes with: short, because readHeader waits that
// long for it. Every other input is read by a Mux with the default
// timeout, so that a reader descheduled for longer than the short timeout
// on a busy machine is not taken for a timed-out header.
const fuzzShortTimeout = 10 * time.Millisecond

// fuzzBlockLimit is how long any step of FuzzHeader may take beyond the
// header timeout before it counts as blocked: long, for a busy machine.
const fuzzBlockLimit = 2 * time.Second

// errTruncated stands for an input that ends inside the header.
var errTruncated = errors.New("truncated header")

// specHeader reads the header at the start of data as header.go's comment
// describes it, independently of readProto and readNodeID: the protocol
// byte, the dialer's ID and the header's length, or errTruncated,
// errBadVersion or errBadHeader. The version and the ID's length are read
// together, as readNodeID does.
func specHeader(data []byte) (proto byte, id string, n int, err error) {
	switch {
	case len(data) < 3:
		return 0, "", 0, errTruncated
	case data[1] != headerVersion:
		return 0, "", 0, errBadVersion
	case data[2] == 0:
		return 0, "", 0, errBadHeader
	case len(data) < 3+int(data[2]):
		return 0, "", 0, errTruncated
	}
	n = 3 + int(data[2])
	return data[0], string(data[3:n]), n, nil
}

// FuzzHeader checks the header parsing on arbitrary bytes, and with hold
// the connection left open after them:
//
//   - readProto and readNodeID read exactly the header specHeader reads,
//     fail as it says otherwise (an input that ends early with io.EOF or
//     io.ErrUnexpectedEOF), consume no byte after the header and return an
//     ID of 1 to MaxNodeIDLen bytes;
//   - Mux.readHeader on a connection agrees with them, turns away a byte
//     no Layer listens on after reading that byte alone, reads only under
//     a deadline at most the header timeout away, clears it once the
//     header is read, never blocks longer than the header timeout, and
//     leaves the bytes after the header for the Layer;
//   - a header writeHeader sends for a protocol and an ID drawn from the
//     input parses back to that protocol and ID; writeHeader refuses, with
//     ErrBadNodeID, exactly the IDs a header cannot carry.
func FuzzHeader(f *testing.F) {
	m, short := fuzzMux(f, DefaultHeaderTimeout), fuzzMux(f, fuzzShortTimeout)
	for _, s := range []struct {
		data []byte
		hold bool
	}{
		{[]byte{ProtoRaft, headerVersion, 1, 'a'}, false},
		{append([]byte{ProtoForward, headerVersion, 6}, "node-1\x01raft data"...), true},
		{append([]byte{ProtoLease, headerVersion, MaxNodeIDLen}, strings.Repeat("n", MaxNodeIDLen)...), false},
		{[]byte{99, headerVersion, 1, 'x'}, false},
		{[]byte{ProtoRaft, 9, 1, 'x'}, false},
		{[]byte{ProtoRaft, headerVersion, 0}, false},
		{[]byte{ProtoRaft, headerVersion, 5, 'x'}, true},
		{[]byte{ProtoRing, headerVersion}, false},
		{[]byte{}, true},
	} {
		f.Add(s.data, s.hold)
	}
	f.Fuzz(func(t *testing.T, data []byte, hold bool) {
		checkReaders(t, data)
		if _, _, _, err := specHeader(data); hold && errors.Is(err, errTruncated) && (len(data) == 0 || m.layer(data[0]) != nil) {
			checkReadHeader(t, short, data, hold)
		} else {
			checkReadHeader(t, m, data, hold)
		}
		checkWriteHeader(t, m, data)
	})
}

// fuzzMux returns a Mux with a Layer for every protocol byte the package
// names. It listens on a Unix socket, which it never serves: FuzzHeader
// accepts the connections itself (connPair) and calls readHeader. A Unix
// socket behaves as TCP does here (a peer's close reads as EOF after its
// bytes, deadlines work) without leaving a TIME_WAIT socket per execution.
func fuzzMux(f *testing.F, headerTimeout time.Duration) *Mux {
	ln, err := net.Listen("unix", filepath.Join(f.TempDir(), "mux-"+headerTimeout.String()+".sock"))
	if err != nil {
		f.Fatal(err)
	}
	m := New(ln, "fuzz", nil, WithHeaderTimeout(headerTimeout))
	for _, p := range fuzzProtos {
		m.Listen(p)
	}
	f.Cleanup(func() { _ = m.Close() })
	return m
}

// connPair returns the two ends of a new connection to m's listener.
func connPair(t *testing.T, m *Mux) (client, server net.Conn) {
	client, err := net.Dial("unix", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = m.ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return client, server
}

var fuzzProtos = []byte{ProtoRaft, ProtoRing, ProtoBully, ProtoInvitation, ProtoLease, ProtoForward}

// checkReaders checks readProto and readNodeID on data against specHeader.
func checkReaders(t *testing.T, data []byte) {
	r := bytes.NewReader(data)
	proto, err := readProto(r)
	if len(data) == 0 {
		if !errors.Is(err, io.EOF) {
			t.Fatalf("readProto of nothing: %d, %v", proto, err)
		}
		return
	}
	if err != nil || proto != data[0] {
		t.Fatalf("readProto of %q: %d, %v", data, proto, err)
	}
	id, err := readNodeID(r)
	_, wantID, n, wantErr := specHeader(data)
	switch {
	case errors.Is(wantErr, errTruncated):
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("readNodeID of the truncated %q: %q, %v", data, id, err)
		}
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Fatalf("readNodeID of %q: %q, %v; want %v", data, id, err, wantErr)
		}
	case err != nil || id != wantID || !validNodeID(id):
		t.Fatalf("readNodeID of %q: %q, %v; want %q", data, id, err, wantID)
	case r.Len() != len(data)-n:
		t.Fatalf("readNodeID of %q read %d bytes of a %d-byte header", data, len(data)-r.Len(), n)
	}
}

// deadlineConn is the accepting end of a connection that fails a Read not
// made under a read deadline at most the header timeout away, and records
// the last read deadline set (by SetReadDeadline or SetDeadline).
type deadlineConn struct {
	net.Conn
	t        *testing.T
	timeout  time.Duration // the Mux's header timeout
	mu       sync.Mutex
	deadline time.Time
}

func (c *deadlineConn) SetReadDeadline(d time.Time) error {
	c.record(d)
	return c.Conn.SetReadDeadline(d)
}

func (c *deadlineConn) SetDeadline(d time.Time) error {
	c.record(d)
	return c.Conn.SetDeadline(d)
}

func (c *deadlineConn) record(d time.Time) {
	c.mu.Lock()
	c.deadline = d
	c.mu.Unlock()
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	if d.IsZero() || time.Until(d) > c.timeout {
		c.t.Errorf("header read with the read deadline %v (%v away)", d, time.Until(d))
	}
	return c.Conn.Read(b)
}

// fuzzSentFirst is how much of an input checkReadHeader sends before it
// reads: the longest header and more, which a Unix socket's buffer takes
// without a reader. The sender also closes before the read when that was
// all. So readHeader's outcome does not hang on how soon a sending
// goroutine runs, which on a busy machine can exceed the header timeout.
const fuzzSentFirst = 4 << 10

// checkReadHeader sends data on a connection and checks what readHeader
// makes of it. With hold the sender keeps the connection open after data.
func checkReadHeader(t *testing.T, m *Mux, data []byte, hold bool) {
	client, server := connPair(t, m)
	defer client.Close()
	first, rest := data[:min(len(data), fuzzSentFirst)], data[min(len(data), fuzzSentFirst):]
	if _, err := client.Write(first); err != nil {
		t.Fatal(err)
	}
	if len(rest) == 0 && !hold {
		_ = client.Close()
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if len(rest) == 0 {
			return
		}
		_, _ = client.Write(rest) // fails once the server end closes
		if !hold {
			_ = client.Close()
		}
	}()
	conn := &deadlineConn{Conn: server, t: t, timeout: m.headerTimeout}
	start := time.Now()
	_, l, id, err := m.open(conn)
	elapsed := time.Since(start)
	if elapsed > m.headerTimeout+fuzzBlockLimit {
		t.Fatalf("readHeader of %q took %v", data, elapsed)
	}
	wantProto, wantID, n, wantErr := specHeader(data)
	switch {
	case len(data) > 0 && m.layer(data[0]) == nil:
		if !errors.Is(err, errUnknownProto) {
			t.Fatalf("readHeader of %q, an unknown protocol byte: %v", data, err)
		}
		checkRest(t, server, data[1:], hold)
	case errors.Is(wantErr, errTruncated) && hold:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("readHeader of the truncated %q, held open: %v; want the header timeout", data, err)
		}
	case errors.Is(wantErr, errTruncated):
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("readHeader of the truncated %q: %v", data, err)
		}
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Fatalf("readHeader of %q: %v; want %v", data, err, wantErr)
		}
	case err != nil || l == nil || l.proto != wantProto || id != wantID:
		t.Fatalf("readHeader of %q: layer %v, id %q, %v; want protocol %d, id %q", data, l, id, err, wantProto, wantID)
	default:
		if !conn.deadline.IsZero() {
			t.Fatalf("readHeader of %q left the read deadline %v", data, conn.deadline)
		}
		checkRest(t, server, data[n:], hold)
	}
	_ = server.Close()
	select {
	case <-sent:
	case <-time.After(fuzzBlockLimit):
		t.Fatalf("the sender of %q is still blocked", data)
	}
}

// checkRest checks that the bytes after what readHeader read (the header,
// or an unknown protocol byte) are still to be read, whole.
func checkRest(t *testing.T, server net.Conn, rest []byte, hold bool) {
	if err := server.SetReadDeadline(time.Now().Add(fuzzBlockLimit)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(rest))
	if _, err := io.ReadFull(server, got); err != nil || !bytes.Equal(got, rest) {
		t.Fatalf("after the header: %q, %v; want %q", got, err, rest)
	}
	if !hold {
		if n, err := server.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("after the data: %d bytes, %v; want EOF", n, err)
		}
	}
}

// checkWriteHeader sends the header writeHeader writes for a protocol of
// the Mux's (picked by data's first byte) and the ID made of the rest of
// data, and checks that readHeader reads that protocol and ID from it.
func checkWriteHeader(t *testing.T, m *Mux, data []byte) {
	proto, id := ProtoRaft, ""
	if len(data) > 0 {
		proto, id = fuzzProtos[int(data[0])%len(fuzzProtos)], string(data[1:])
	}
	client, server := connPair(t, m)
	defer server.Close()
	// A header fits the socket's buffer: it is written before it is read.
	_ = client.SetWriteDeadline(time.Now().Add(fuzzBlockLimit))
	werr := writeHeader(client, proto, id)
	_ = client.Close()
	if werr != nil {
		if validNodeID(id) || !errors.Is(werr, ErrBadNodeID) {
			t.Fatalf("writeHeader(%d, %q): %v", proto, id, werr)
		}
		return // refused: nothing was sent
	}
	_, l, got, err := m.open(server)
	if err != nil || l == nil || l.proto != proto || got != id {
		t.Fatalf("writeHeader(%d, %q) read back as layer %v, id %q, %v", proto, id, l, got, err)
	}
}
