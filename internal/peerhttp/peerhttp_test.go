package peerhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pair starts Serve with h on a loopback listener and returns a Transport
// that dials it for the peer address "leader:1".
func pair(t *testing.T, h http.Handler) (*Transport, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { _ = Serve(ln, h, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	tr := &Transport{
		Dial: func(addr string, d time.Duration) (net.Conn, error) {
			if addr != "leader:1" {
				return nil, fmt.Errorf("dial %s: no such peer", addr)
			}
			return net.DialTimeout("tcp", ln.Addr().String(), d)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, ln
}

// sent records whether the transport said the request was handed over.
func traced(ctx context.Context, sent *atomic.Bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { sent.Store(true) }})
}

func TestRoundTrip_CarriesRequestAndAnswer(t *testing.T) {
	tr, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Retry-After", "1")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s %s %s %d", r.Method, r.URL.RequestURI(), r.Header.Get("X-Lockd-Forwarded"), b, r.ContentLength)
	}))
	req, _ := http.NewRequest("POST", "http://leader:1/v1/locks/a%2Fb/acquire?x=1", strings.NewReader(`{"wait":"1s"}`))
	req.Header.Set("X-Lockd-Forwarded", "n2")
	var sent atomic.Bool
	resp, err := tr.RoundTrip(req.WithContext(traced(context.Background(), &sent)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `POST /v1/locks/a%2Fb/acquire?x=1 n2 {"wait":"1s"} 13`
	if resp.StatusCode != http.StatusTeapot || string(body) != want || resp.Header.Get("Retry-After") != "1" ||
		strings.Join(resp.Header.Values("X-Multi"), ",") != "a,b" || resp.ContentLength != int64(len(want)) {
		t.Fatalf("got %d %q %v, want 418 %q", resp.StatusCode, body, resp.Header, want)
	}
	if !sent.Load() {
		t.Fatal("GotConn was not called for a request that was answered")
	}
}

// Many requests share one connection, and each gets its own answer
// whatever order they finish in.
func TestRoundTrip_ConcurrentRequestsGetTheirOwnAnswers(t *testing.T) {
	var dials atomic.Int32
	tr, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		var d time.Duration
		_, _ = fmt.Sscan(n, &d)
		time.Sleep(d % 7 * time.Millisecond)
		_, _ = io.WriteString(w, n)
	}))
	dial := tr.Dial
	tr.Dial = func(addr string, d time.Duration) (net.Conn, error) { dials.Add(1); return dial(addr, d) }
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://leader:1/x?n=%d", i), nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if string(b) != fmt.Sprint(i) {
				errs <- fmt.Errorf("request %d got answer %q", i, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for 100 requests to one node, want 1", n)
	}
}

// A request whose context ends is cancelled on the answering node too, as
// a closed HTTP connection would cancel it.
func TestRoundTrip_CancelReachesTheHandler(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	tr, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(10 * time.Second):
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://leader:1/block", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req) //nolint:bodyclose // cancelled before it is answered: no response, no body
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip after cancel: %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end after the forwarding side cancelled")
	}
}

// A connection that fails after the request was handed over fails the
// request with GotConn called (outcome unknown); a dial that fails fails it
// without (not sent). The next request dials again.
func TestRoundTrip_Failures(t *testing.T) {
	var conns sync.Map
	block := make(chan struct{})
	tr, ln := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-block
		}
		_, _ = io.WriteString(w, "ok")
	}))
	dial := tr.Dial
	tr.Dial = func(addr string, d time.Duration) (net.Conn, error) {
		c, err := dial(addr, d)
		if err == nil {
			conns.Store(c, true)
		}
		return c, err
	}
	defer close(block)

	var sent atomic.Bool
	req, _ := http.NewRequest("POST", "http://leader:1/block", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req.WithContext(traced(context.Background(), &sent))) //nolint:bodyclose // its connection is closed under it: no response, no body
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	if err := <-errc; err == nil || !sent.Load() {
		t.Fatalf("request on a connection that failed: err %v, sent %v; want an error after GotConn", err, sent.Load())
	}

	req, _ = http.NewRequest("GET", "http://leader:1/ok", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("next request after a failed connection: %v", err)
	}
	resp.Body.Close()

	tr.CloseIdleConnections()
	ln.Close()
	var sent2 atomic.Bool
	req, _ = http.NewRequest("GET", "http://leader:1/ok", nil)
	if _, err := tr.RoundTrip(req.WithContext(traced(context.Background(), &sent2))); err == nil || sent2.Load() { //nolint:bodyclose // the node cannot be dialled: no response, no body
		t.Fatalf("request to a node that cannot be dialled: err %v, sent %v; want an error before GotConn", err, sent2.Load())
	}
}

func TestFrame_RoundTripAndMalformed(t *testing.T) {
	in := frame{kind: kindRequest, id: 42, method: "POST", uri: "/v1/x?y=1",
		header: http.Header{"A": {"1", "2"}}, body: []byte("body")}
	got, err := readFrame(bufio.NewReader(bytes.NewReader(in.encode())))
	if err != nil || got.id != 42 || got.method != "POST" || got.uri != in.uri ||
		strings.Join(got.header["A"], ",") != "1,2" || string(got.body) != "body" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	good := in.encode()
	trailing := append([]byte{0, 0, 0, byte(len(good) - 4 + 1)}, append(good[4:len(good):len(good)], 0)...)
	badKind := append([]byte{}, good...)
	badKind[4] = 9
	resp := frame{kind: kindResponse, id: 7, status: 418, body: []byte("tea")}
	if got, err := readFrame(bufio.NewReader(bytes.NewReader(resp.encode()))); err != nil || got.status != 418 || string(got.body) != "tea" {
		t.Fatalf("response round trip: %+v, %v", got, err)
	}
	badStatus := func(status int) []byte {
		f := resp
		f.status = status
		return f.encode()
	}
	for name, b := range map[string][]byte{
		"truncated":   good[:len(good)-1],
		"trailing":    trailing,
		"bad kind":    badKind,
		"huge length": {0xff, 0xff, 0xff, 0xff, 1},
		"empty":       {0, 0, 0, 0},
		"status 0":    badStatus(0),
		"status 99":   badStatus(99),
		"status 1000": badStatus(1000),
	} {
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(b))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
