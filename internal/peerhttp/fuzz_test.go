package peerhttp

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"testing"
)

// FuzzReadFrame feeds readFrame arbitrary bytes, as a node on the other
// end of a forwarding connection (or anything that reached the peer port)
// could send them. readFrame must never panic, must refuse what it cannot
// parse with an error, and what it accepts must survive encode and read
// again unchanged.
func FuzzReadFrame(f *testing.F) {
	for _, fr := range []frame{
		{kind: kindRequest, id: 1, method: "POST", uri: "/v1/locks/a/acquire", header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{"session":"s"}`)},
		{kind: kindRequest, id: 1 << 40, method: "GET", uri: "/v1/sessions?index=3&wait=1s", header: http.Header{"A": {"1", "2"}, "": {""}}},
		{kind: kindResponse, id: 2, status: 200, header: http.Header{"X-Lockd-Index": {"9"}}, body: []byte("{}")},
		{kind: kindResponse, id: 3, status: 504},
		{kind: kindCancel, id: 4},
	} {
		f.Add(fr.encode())
	}
	f.Add([]byte{0, 0, 0, 2, kindCancel, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 4 && (uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) > 64<<10 {
			// A length that says more than the input holds fails on the
			// read; a large one would only cost the fuzzer memory.
			b = b[:4]
		}
		got, err := readFrame(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		switch got.kind {
		case kindRequest, kindResponse, kindCancel:
		default:
			t.Fatalf("accepted a frame of kind %d", got.kind)
		}
		if got.kind == kindResponse && (got.status < 100 || got.status > 999) {
			t.Fatalf("accepted status %d", got.status)
		}
		again, err := readFrame(bufio.NewReader(bytes.NewReader(got.encode())))
		if err != nil {
			t.Fatalf("an accepted frame does not read back after encode: %v", err)
		}
		if d := frameDiff(got, again); d != "" {
			t.Fatalf("an accepted frame changed through encode and read: %s", d)
		}
	})
}

// frameDiff describes how a and b differ ("" if they do not). A nil and
// an empty header or body are the same.
func frameDiff(a, b frame) string {
	switch {
	case a.kind != b.kind || a.id != b.id:
		return fmt.Sprintf("kind/id %d/%d, then %d/%d", a.kind, a.id, b.kind, b.id)
	case a.method != b.method || a.uri != b.uri || a.status != b.status:
		return fmt.Sprintf("%q %q %d, then %q %q %d", a.method, a.uri, a.status, b.method, b.uri, b.status)
	case !bytes.Equal(a.body, b.body):
		return fmt.Sprintf("body %q, then %q", a.body, b.body)
	case len(a.header) != len(b.header):
		return fmt.Sprintf("header %v, then %v", a.header, b.header)
	}
	for k, vs := range a.header {
		if fmt.Sprint(vs) != fmt.Sprint(b.header[k]) {
			return fmt.Sprintf("header %q: %q, then %q", k, vs, b.header[k])
		}
	}
	return ""
}
