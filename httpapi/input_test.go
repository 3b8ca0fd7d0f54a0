package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// TestInput_Rejected checks that bad input is answered with a message that
// names the problem, and never reaches the Service.
func TestInput_Rejected(t *testing.T) {
	long := strings.Repeat("a", api.MaxNameLen+1)
	bigValue := strings.Repeat("v", api.MaxValueLen+1)
	huge := `{"session":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name, method, path, body string
		wantStatus               int // 400 when zero
		wantMsg                  string
	}{
		// Malformed bodies.
		{"truncated JSON", "POST", "/v1/locks/a/acquire", `{"session":`, 0, "malformed JSON"},
		{"syntax error", "POST", "/v1/locks/a/acquire", `{"session" "s1"}`, 0, "malformed JSON at byte"},
		{"not an object", "POST", "/v1/locks/a/acquire", `["s1"]`, 0, "request body must be a JSON object, not array"},
		{"unknown field", "POST", "/v1/locks/a/acquire", `{"sesion":"s1"}`, 0, `unknown field "sesion"`},
		{"unknown field in session create", "POST", "/v1/sessions", `{"tll":"5s"}`, 0, `unknown field "tll"`},
		{"trailing garbage", "POST", "/v1/locks/a/acquire", `{"session":"s1"}x`, 0, "unexpected data after the JSON object"},
		{"two objects", "POST", "/v1/locks/a/release", `{"session":"s1"} {}`, 0, "unexpected data after the JSON object"},
		{"string for string field", "POST", "/v1/locks/a/acquire", `{"session":1}`, 0, "session must be a string, not number"},
		{"string token", "POST", "/v1/locks/a/check", `{"token":"42"}`, 0, "token must be a non-negative integer, not string"},
		{"negative token", "POST", "/v1/locks/a/check", `{"token":-1}`, 0, "token must be a non-negative integer"},
		{"number for duration", "POST", "/v1/locks/a/acquire", `{"session":"s1","wait":5}`, 0, "wait: duration must be a string"},
		{"bad duration", "POST", "/v1/sessions", `{"ttl":"5x"}`, 0, `ttl: bad duration "5x": use`},
		{"bad second duration", "POST", "/v1/sessions", `{"ttl":"5s","lock_delay":"soon"}`, 0, `lock_delay: bad duration "soon"`},
		{"bad duration, same text in a string field", "POST", "/v1/sessions", `{"name":"5x","ttl":"5x"}`, 0, `ttl: bad duration "5x"`},
		{"body too large", "POST", "/v1/locks/a/acquire", huge, 413, "larger than the limit"},
		{"session body too large", "POST", "/v1/sessions", huge, 413, "larger than the limit"},

		// Required fields.
		{"empty acquire body", "POST", "/v1/locks/a/acquire", "", 0, "request body is required"},
		{"blank release body", "POST", "/v1/locks/a/release", " \n", 0, "request body is required"},
		{"acquire without session", "POST", "/v1/locks/a/acquire", `{"mode":"shared"}`, 0, "session is required"},
		{"release without session", "POST", "/v1/locks/a/release", `{}`, 0, "session is required"},
		{"check without token", "POST", "/v1/locks/a/check", `{}`, 0, "token is required"},
		{"check with token null", "POST", "/v1/locks/a/check", `{"token":null}`, 0, "token is required"},
		{"check with token 0", "POST", "/v1/locks/a/check", `{"token":0}`, 0, "token must be a positive integer, not 0"},
		{"campaign without session", "POST", "/v1/elections/e/campaign", `{"value":"v"}`, 0, "session is required"},
		{"proclaim without session", "POST", "/v1/elections/e/proclaim", `{"value":"v"}`, 0, "session is required"},
		{"resign without session", "POST", "/v1/elections/e/resign", `{"seq":1}`, 0, "session is required"},
		{"null body", "POST", "/v1/elections/e/resign", `null`, 0, "request body must be a JSON object, not null"},

		// Names.
		{"empty name", "POST", "/v1/locks//acquire", `{"session":"s1"}`, 0, "name is empty"},
		{"empty segment", "POST", "/v1/locks/a//b/acquire", `{"session":"s1"}`, 0, "empty segment"},
		{"trailing slash", "POST", "/v1/locks/a//acquire", `{"session":"s1"}`, 0, "empty segment"},
		{"dot-dot segment", "POST", "/v1/locks/a/../b/acquire", `{"session":"s1"}`, 0, `".." segment`},
		{"dot segment", "POST", "/v1/elections/./campaign", `{"session":"s1"}`, 0, `"." segment`},
		{"space in name", "POST", "/v1/locks/a%20b/release", `{"session":"s1"}`, 0, "has the character ' '"},
		{"bad character", "GET", "/v1/locks/a$b", "", 0, "has the character '$'"},
		{"name too long", "POST", "/v1/locks/" + long + "/acquire", `{"session":"s1"}`, 0, "257 bytes long; the limit is 256"},
		{"election name too long", "GET", "/v1/elections/" + long, "", 0, "257 bytes long"},
		{"read of empty name", "GET", "/v1/locks/", "", 0, "name is empty"},

		// Ranges.
		{"ttl too short", "POST", "/v1/sessions", `{"ttl":"500ms"}`, 0, "ttl 500ms is out of range"},
		{"ttl too long", "POST", "/v1/sessions", `{"ttl":"25h"}`, 0, "ttl 25h0m0s is out of range"},
		{"negative ttl", "POST", "/v1/sessions", `{"ttl":"-1s"}`, 0, "ttl -1s is out of range"},
		{"lock_delay too long", "POST", "/v1/sessions", `{"lock_delay":"61s"}`, 0, "lock_delay 1m1s is out of range"},
		{"negative lock_delay", "POST", "/v1/sessions", `{"lock_delay":"-1s"}`, 0, "lock_delay -1s is out of range"},
		{"session name too long", "POST", "/v1/sessions", `{"name":"` + long + `"}`, 0, "name is 257 bytes long"},
		{"acquire wait too long", "POST", "/v1/locks/a/acquire", `{"session":"s1","wait":"6m"}`, 0, "wait 6m0s is out of range"},
		{"negative acquire wait", "POST", "/v1/locks/a/acquire", `{"session":"s1","wait":"-1s"}`, 0, "wait -1s is out of range"},
		{"bad mode", "POST", "/v1/locks/a/acquire", `{"session":"s1","mode":"read"}`, 0, `mode "read" is not valid: use "exclusive" or "shared"`},
		{"negative limit", "POST", "/v1/locks/a/acquire", `{"session":"s1","limit":-1}`, 0, "limit -1 is out of range: it must be between 1 and 1024"},
		{"limit over the bound", "POST", "/v1/locks/a/acquire", `{"session":"s1","limit":1025}`, 0, "limit 1025 is out of range"},
		{"limit not a number", "POST", "/v1/locks/a/acquire", `{"session":"s1","limit":"2"}`, 0, "limit"},
		{"shared semaphore", "POST", "/v1/locks/a/acquire", `{"session":"s1","limit":2,"mode":"shared"}`, 0, `a semaphore (limit 2) takes no mode "shared"`},
		{"campaign wait too long", "POST", "/v1/elections/e/campaign", `{"session":"s1","wait":"1h"}`, 0, "wait 1h0m0s is out of range"},
		{"campaign value too long", "POST", "/v1/elections/e/campaign", `{"session":"s1","value":"` + bigValue + `"}`, 0, "value is 4097 bytes long"},
		{"proclaim value too long", "POST", "/v1/elections/e/proclaim", `{"session":"s1","value":"` + bigValue + `"}`, 0, "value is 4097 bytes long"},

		// Query parameters.
		{"bad index", "GET", "/v1/locks/a?index=x", "", 0, `bad index "x"`},
		{"negative index", "GET", "/v1/locks?index=-1", "", 0, `bad index "-1"`},
		{"bad wait", "GET", "/v1/elections/e?index=1&wait=5x", "", 0, `bad wait "5x"`},
		{"query wait too long", "GET", "/v1/sessions?wait=6m", "", 0, "wait 6m0s is out of range"},
		{"negative query wait", "GET", "/v1/sessions/s1?wait=-1s", "", 0, "wait -1s is out of range"},
		{"bad stale", "GET", "/v1/locks/a?stale=maybe", "", 0, `bad stale "maybe"`},
		{"bad consistent", "GET", "/v1/locks/a?consistent=2", "", 0, `bad consistent "2"`},
		{"stale and consistent", "GET", "/v1/locks/a?stale&consistent", "", 0, "stale and consistent cannot be used together"},
		{"limit zero", "GET", "/v1/sessions?limit=0", "", 0, `bad limit "0": must be an integer from 1 to 10000`},
		{"negative limit", "GET", "/v1/locks?limit=-5", "", 0, `bad limit "-5"`},
		{"limit too large", "GET", "/v1/elections?limit=10001", "", 0, `bad limit "10001"`},
		{"limit not a number", "GET", "/v1/sessions?limit=ten", "", 0, `bad limit "ten"`},
		{"limit not an integer", "GET", "/v1/locks?limit=1.5", "", 0, `bad limit "1.5"`},
		{"cursor too long", "GET", "/v1/locks?after=" + long, "", 0, "after is 257 bytes long; the limit is 256"},
		{"list with a bad wait", "GET", "/v1/elections?wait=forever", "", 0, `bad wait "forever"`},

		// Members.
		{"member without id", "POST", "/v1/cluster/members", `{"peer":"h:1","http":"h:2"}`, 0, "id is required"},
		{"member without peer", "POST", "/v1/cluster/members", `{"id":"n2","http":"h:2"}`, 0, "peer is required"},
		{"member without http", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h:1"}`, 0, "http is required"},
		{"peer without port", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h","http":"h:2"}`, 0, `peer "h" is not valid`},
		{"peer without host", "POST", "/v1/cluster/members", `{"id":"n2","peer":":7401","http":"h:2"}`, 0, `peer ":7401" is not valid`},
		{"peer port out of range", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h:70000","http":"h:2"}`, 0, `peer "h:70000" is not valid`},
		{"http bad scheme", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h:1","http":"ftp://h:2"}`, 0, `http "ftp://h:2" is not valid`},
		{"http with path", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h:1","http":"http://h:2/api"}`, 0, `http "http://h:2/api" is not valid`},
		{"http without port", "POST", "/v1/cluster/members", `{"id":"n2","peer":"h:1","http":"h"}`, 0, `http "h" is not valid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, tt.body)
			want := tt.wantStatus
			if want == 0 {
				want = http.StatusBadRequest
			}
			if rec.Code != want {
				t.Errorf("status = %d, want %d; body %s", rec.Code, want, rec.Body)
			}
			e := mustErrorBody(t, rec)
			wantCode := map[int]string{400: api.CodeBadRequest, 413: api.CodeTooLarge}[want]
			if e.Code != wantCode || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("body = %+v, want code %q and a message containing %q", e, wantCode, tt.wantMsg)
			}
			if calls := svc.Calls(); len(calls) != 0 {
				t.Errorf("bad input reached the Service: %v", calls)
			}
		})
	}
}

// TestBody_TooLargeOverHTTP checks that a client that writes its whole
// oversized body before it reads anything gets the 413 answer over a real
// connection, rather than a reset, with a known length and chunked.
func TestBody_TooLargeOverHTTP(t *testing.T) {
	svc := newLeaderFake()
	ts := httptest.NewUnstartedServer(mustNewServer(t, svc, nil))
	ts.Listener = smallBufListener{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	// Small socket buffers on both ends: the naive client can only finish
	// writing if the server really reads the body.
	mib := `{"session":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct{ name, head, body string }{
		{"1 MiB, content-length", fmt.Sprintf("Content-Length: %d\r\n", len(mib)), mib},
		{"1 MiB, chunked", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(mib), mib)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := mustSendThenRead(t, ts.Listener.Addr().String(), //nolint:bodyclose // mustSendThenRead reads and closes the body
				"POST /v1/locks/a/acquire HTTP/1.1\r\nHost: lockd\r\nContent-Type: application/json\r\n"+tt.head+"\r\n"+tt.body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("status = %d, want 413; body %s", resp.StatusCode, b)
			}
			if !strings.Contains(b, `"code":"too_large"`) {
				t.Errorf("body = %s, want code too_large", b)
			}
		})
	}
	if calls := svc.Calls(); len(calls) != 0 {
		t.Errorf("oversized body reached the Service: %v", calls)
	}
}

// smallBuf is the socket buffer size of TestBody_TooLargeOverHTTP, far below
// the bodies it sends, so that the kernel cannot absorb them.
const smallBuf = 64 << 10

// smallBufListener shrinks the receive buffer of every accepted connection.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(smallBuf)
	}
	return c, err
}

// mustSendThenRead writes a raw request to addr in full, as a naive client
// does, and only then reads the response.
func mustSendThenRead(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).SetWriteBuffer(smallBuf); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// TestInput_BodylessPosts checks that the POSTs without a required body
// accept none.
func TestInput_BodylessPosts(t *testing.T) {
	for _, path := range []string{"/v1/sessions", "/v1/sessions/s1/keepalive"} {
		svc := newLeaderFake()
		rec := serve(mustNewServer(t, svc, nil), "POST", path, "")
		if rec.Code/100 != 2 {
			t.Errorf("POST %s with no body: status %d, body %s", path, rec.Code, rec.Body)
		}
		if len(svc.Calls()) != 1 {
			t.Errorf("POST %s: calls = %v, want one", path, svc.Calls())
		}
	}
}
