package httpapi

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// earlyMaxHeaderBytes is the MaxHeaderBytes of the servers of the
// EarlyAnswers tests.
const earlyMaxHeaderBytes = 4 << 10

// startEarly starts the API over a fake leader behind EarlyAnswers, with
// TLS above it when tls is true, as server does.
func startEarly(t *testing.T, h http.Handler, withTLS bool) *httptest.Server {
	t.Helper()
	if h == nil {
		h = mustNewServer(t, newLeaderFake(), nil)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.MaxHeaderBytes = earlyMaxHeaderBytes
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // a refused TLS handshake is expected
	ts.Listener = EarlyAnswers(ts.Listener, earlyMaxHeaderBytes)
	if withTLS {
		ts.StartTLS() // puts TLS above EarlyAnswers, as ServeTLS does
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts
}

// rawExchange writes request to conn and reads one answer.
func rawExchange(t *testing.T, conn net.Conn, request string) (*http.Response, string) {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// bigHeader is a request whose headers are over earlyMaxHeaderBytes and
// net/http's slack of 4096 bytes.
var bigHeader = "GET /v1/cluster HTTP/1.1\r\nHost: lockd\r\nX-Big: " + strings.Repeat("x", 3*earlyMaxHeaderBytes) + "\r\n\r\n"

// TestEarlyAnswers_JSON checks that the answers net/http gives itself,
// before any handler, to a request it cannot parse are JSON errors with a
// code where the raw connection carries them: on the plain HTTP port, and
// to plain HTTP on the HTTPS port.
func TestEarlyAnswers_JSON(t *testing.T) {
	plain := startEarly(t, nil, false)
	secure := startEarly(t, nil, true)
	tests := []struct {
		name, addr, request string
		wantStatus          int
		wantProto, wantCode string
		wantMsg             string
	}{
		{"headers too large", plain.Listener.Addr().String(), bigHeader,
			431, "HTTP/1.1", api.CodeTooLarge, "the request line and headers are larger than the limit of 4096 bytes"},
		{"no Host header", plain.Listener.Addr().String(), "GET /v1/cluster HTTP/1.1\r\n\r\n",
			400, "HTTP/1.1", api.CodeBadRequest, "malformed HTTP request: missing required Host header"},
		{"malformed header line", plain.Listener.Addr().String(), "GET /v1/cluster HTTP/1.1\r\nHost: lockd\r\nno colon here\r\n\r\n",
			400, "HTTP/1.1", api.CodeBadRequest, "malformed HTTP request"},
		{"malformed request line", plain.Listener.Addr().String(), "GARBAGE\r\n\r\n",
			400, "HTTP/1.1", api.CodeBadRequest, "malformed HTTP request"},
		{"unknown HTTP version", plain.Listener.Addr().String(), "GET /v1/cluster HTTP/3.0\r\nHost: lockd\r\n\r\n",
			505, "HTTP/1.1", api.CodeBadRequest, "malformed HTTP request: unsupported protocol version"},
		{"unknown transfer encoding", plain.Listener.Addr().String(), "POST /v1/sessions HTTP/1.1\r\nHost: lockd\r\nTransfer-Encoding: gzip\r\n\r\n",
			501, "HTTP/1.1", api.CodeBadRequest, "unsupported Transfer-Encoding: send a body with Content-Length or chunked"},
		{"plain HTTP on the HTTPS port", secure.Listener.Addr().String(), "GET /v1/cluster HTTP/1.1\r\nHost: lockd\r\n\r\n",
			400, "HTTP/1.0", api.CodeBadRequest, "this port serves HTTPS, and the request came in plain HTTP: use an https:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			resp, body := rawExchange(t, conn, tt.request) //nolint:bodyclose // rawExchange reads and closes the body
			if resp.StatusCode != tt.wantStatus || resp.Proto != tt.wantProto {
				t.Errorf("answer %s %s, want %s %d", resp.Proto, resp.Status, tt.wantProto, tt.wantStatus)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q; body %q", ct, body)
			}
			var fields map[string]string
			if err := json.Unmarshal([]byte(body), &fields); err != nil || len(fields) != 2 {
				t.Fatalf("body %q: want exactly {\"error\",\"code\"}", body)
			}
			if fields["code"] != tt.wantCode || fields["error"] != tt.wantMsg {
				t.Errorf("body = %v, want code %q and error %q", fields, tt.wantCode, tt.wantMsg)
			}
			if !resp.Close {
				t.Errorf("the answer does not close the connection")
			}
		})
	}
}

// TestEarlyAnswers_PlainOverTLS pins the early answers that stay plain
// text, as docs/api.md says: over TLS net/http encrypts them before they
// reach the connection EarlyAnswers sees. The status is still net/http's.
func TestEarlyAnswers_PlainOverTLS(t *testing.T) {
	secure := startEarly(t, nil, true)
	for _, tt := range []struct {
		name, request string
		wantStatus    int
	}{
		{"headers too large", bigHeader, 431},
		{"no Host header", "GET /v1/cluster HTTP/1.1\r\n\r\n", 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", secure.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test server's own certificate
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			resp, body := rawExchange(t, conn, tt.request) //nolint:bodyclose // rawExchange reads and closes the body
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d; body %q", resp.StatusCode, tt.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q: net/http's early answers over TLS were plain text; update docs/api.md if they no longer are", ct)
			}
		})
	}
}

// TestEarlyAnswers_LeavesAnswersAlone checks that EarlyAnswers passes every
// other answer through unchanged: JSON answers over plain HTTP and TLS on
// kept-alive connections, and a body that spells an early answer
// (handlers write their answers through a buffer, never in one write of
// that shape).
func TestEarlyAnswers_LeavesAnswersAlone(t *testing.T) {
	const spelt = "HTTP/1.1 400 Bad Request" + earlyHeaders + "400 Bad Request"
	mux := http.NewServeMux()
	mux.Handle("/", mustNewServer(t, newLeaderFake(), nil))
	mux.HandleFunc("/spelt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, spelt)
	})
	for _, withTLS := range []bool{false, true} {
		ts := startEarly(t, mux, withTLS)
		hc := ts.Client()
		for range 3 { // one connection, kept alive
			resp, err := hc.Get(ts.URL + "/v1/cluster")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("TLS %v: GET /v1/cluster answered %s %q", withTLS, resp.Status, b)
			}
		}
		resp, err := hc.Get(ts.URL + "/spelt")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != spelt {
			t.Errorf("TLS %v: GET /spelt answered %s %q, want 200 and the body as written", withTLS, resp.Status, b)
		}
	}
}
