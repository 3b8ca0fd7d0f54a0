package peerhttp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Frame kinds.
const (
	kindRequest  byte = 1 // a request, from the forwarding node
	kindCancel   byte = 2 // the forwarding node gave up on a request
	kindResponse byte = 3 // the answer to a request
)

// MaxFrame bounds a frame's length: a request body is far smaller (the API
// refuses bodies over api.MaxBody), and the largest answers are listings.
const MaxFrame = 64 << 20

var errFrame = errors.New("peerhttp: malformed frame")

// frame is one message on a forwarding connection. Each is sent as a 4-byte
// big-endian length and then:
//
//	kind    1 byte
//	id      uvarint   the request's number on this connection
//	request:  method, uri (path and query), headers, body
//	response: status (uvarint), headers, body
//	cancel:   nothing more
//
// where a string or the body is a uvarint length and its bytes, and headers
// are a uvarint count of name and value pairs.
type frame struct {
	kind   byte
	id     uint64
	method string
	uri    string
	status int
	header http.Header
	body   []byte
}

// encode returns the frame with its length prefix.
func (f *frame) encode() []byte {
	n := 4 + 1 + binary.MaxVarintLen64*4 + len(f.method) + len(f.uri) + len(f.body)
	for k, vs := range f.header {
		for _, v := range vs {
			n += 2*binary.MaxVarintLen64 + len(k) + len(v)
		}
	}
	b := make([]byte, 4, n)
	b = append(b, f.kind)
	b = binary.AppendUvarint(b, f.id)
	switch f.kind {
	case kindRequest:
		b = appendString(b, f.method)
		b = appendString(b, f.uri)
		b = appendHeader(b, f.header)
		b = appendString(b, string(f.body))
	case kindResponse:
		b = binary.AppendUvarint(b, uint64(f.status)) //nolint:gosec // G115: an HTTP status, 100-999
		b = appendHeader(b, f.header)
		b = appendString(b, string(f.body))
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4)) //nolint:gosec // G115: readFrame refuses frames over MaxFrame (64 MiB), far below 4 GiB
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h http.Header) []byte {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	b = binary.AppendUvarint(b, uint64(n))
	for k, vs := range h {
		for _, v := range vs {
			b = appendString(b, k)
			b = appendString(b, v)
		}
	}
	return b
}

// readFrame reads one frame. A frame longer than MaxFrame, or one that
// does not parse, is an error: the connection is then unusable.
func readFrame(r *bufio.Reader) (frame, error) {
	var f frame
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return f, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n < 2 || n > MaxFrame {
		return f, fmt.Errorf("%w: length %d", errFrame, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return f, err
	}
	d := decoder{b: buf}
	f.kind = d.byte()
	f.id = d.uvarint()
	switch f.kind {
	case kindRequest:
		f.method = d.string()
		f.uri = d.string()
		f.header = d.header()
		f.body = d.bytes()
	case kindResponse:
		// A status net/http cannot write (WriteHeader panics outside
		// 100-999) is as malformed as a truncated frame.
		status := d.uvarint()
		if status < 100 || status > 999 {
			d.err = errFrame
		}
		f.status = int(status) //nolint:gosec // G115: at most 999 here, or the frame is refused
		f.header = d.header()
		f.body = d.bytes()
	case kindCancel:
	default:
		return f, fmt.Errorf("%w: kind %d", errFrame, f.kind)
	}
	if d.err != nil || len(d.b) != 0 {
		return f, fmt.Errorf("%w: kind %d", errFrame, f.kind)
	}
	return f, nil
}

// decoder reads a frame's fields; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errFrame
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errFrame
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errFrame
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) header() http.Header {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errFrame
		return nil
	}
	h := make(http.Header, n)
	for range n {
		k, v := d.string(), d.string()
		if d.err != nil {
			return nil
		}
		h[k] = append(h[k], v)
	}
	return h
}
