package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lockd/lockd/api"
)

// net/http answers a request it cannot parse itself, before any handler
// runs, with a fixed plain-text answer written straight to the connection
// in one write (net/http's conn.serve): "431 Request Header Fields Too
// Large" for headers over the server's MaxHeaderBytes, "400 Bad Request"
// for a malformed request line or header, 501 for an unknown
// Transfer-Encoding, 505 for an unknown HTTP version; and on a TLS port
// "400 Bad Request" to a client that speaks plain HTTP, written on the
// connection under TLS. EarlyAnswers turns those writes into JSON answers
// where it can see them: on the raw connection. Over TLS, what net/http
// writes after the handshake is encrypted before it reaches the raw
// connection, so there the 431, 400, 501 and 505 of a malformed request
// stay plain text (docs/api.md says so).
const (
	// earlyHeaders are the headers of net/http's early answers.
	earlyHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	// plainToTLS is net/http's answer to plain HTTP on a TLS port.
	plainToTLS = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
	// maxEarly bounds the length of an early answer: a longer write is
	// never one.
	maxEarly = 512
)

// EarlyAnswers wraps the API's listener so that the answers net/http
// writes itself to requests it cannot parse are JSON
// {"error","code"} answers, as every other answer of the API is, where the
// raw connection carries them (see above). maxHeaderBytes is the
// http.Server's MaxHeaderBytes, named in the 431 answer. Wrap the listener
// that http.Server.Serve or ServeTLS is given: ServeTLS puts TLS above it.
func EarlyAnswers(l net.Listener, maxHeaderBytes int) net.Listener {
	return &earlyListener{Listener: l, maxHeaderBytes: maxHeaderBytes}
}

type earlyListener struct {
	net.Listener
	maxHeaderBytes int
}

func (l *earlyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &earlyConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}, nil
}

// earlyConn is a connection whose early plain-text answers become JSON.
type earlyConn struct {
	net.Conn
	maxHeaderBytes int
	wrote          atomic.Bool // something was written already
}

// Write writes p, or the JSON form of p when p is one of net/http's early
// answers; it then reports p as written.
func (c *earlyConn) Write(p []byte) (int, error) {
	first := !c.wrote.Swap(true)
	a, ok := earlyJSON(p, first, c.maxHeaderBytes)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(a); err != nil {
		return 0, err
	}
	return len(p), nil
}

// NetConn returns the wrapped connection (connlimit.WithConn looks
// through it).
func (c *earlyConn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts down the writing side, as the wrapped connection does:
// net/http uses it to let a client read the 431 answer.
func (c *earlyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// earlyJSON returns the JSON answer that stands for p, when p is one of
// net/http's early answers (the plain-HTTP-on-TLS one only as the first
// write on its connection).
func earlyJSON(p []byte, first bool, maxHeaderBytes int) ([]byte, bool) {
	if len(p) > maxEarly {
		return nil, false
	}
	if first && string(p) == plainToTLS {
		return jsonAnswer("HTTP/1.0", http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest,
			Message: "this port serves HTTPS, and the request came in plain HTTP: use an https:// URL"}), true
	}
	head, text, ok := strings.Cut(string(p), earlyHeaders)
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 ") || len(head) < 12 || strings.ContainsAny(head+text, "\r\n") {
		return nil, false
	}
	status, err := strconv.Atoi(head[9:12])
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	// "400 Bad Request: missing required Host header": the detail, if any.
	_, detail, _ := strings.Cut(head[12:], ": ")
	var e *api.Error
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		e = api.Errorf(api.CodeTooLarge, "the request line and headers are larger than the limit of %d bytes", maxHeaderBytes)
	case status == http.StatusNotImplemented:
		e = api.Errorf(api.CodeBadRequest, "unsupported Transfer-Encoding: send a body with Content-Length or chunked")
	case detail != "":
		e = api.Errorf(api.CodeBadRequest, "malformed HTTP request: %s", detail)
	default:
		e = api.Errorf(api.CodeBadRequest, "malformed HTTP request")
	}
	return jsonAnswer("HTTP/1.1", status, e), true
}

// jsonAnswer returns a whole HTTP answer with e as its JSON body, closing
// the connection.
func jsonAnswer(proto string, status int, e *api.Error) []byte {
	body, _ := json.Marshal(e) // a *api.Error always encodes
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d %s\r\nConnection: close\r\nContent-Length: %d\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n\r\n",
		proto, status, http.StatusText(status), len(body))
	b.Write(body)
	return b.Bytes()
}
