package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/api"
)

// pair is a leader and a follower, each an httptest server over a fake.
// The follower's fake names the leader's URL. seen records the
// X-Lockd-Forwarded header of every request that reached the leader.
type pair struct {
	leader, follower       *fakeService
	leaderURL, followerURL string
	mu                     sync.Mutex
	seen                   []string
}

// mustNewPair starts a leader and a follower on 127.0.0.1.
func mustNewPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{leader: newLeaderFake(), follower: &fakeService{}}
	lsrv := mustNewServer(t, p.leader, nil)
	lts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Header.Get(HeaderForwarded))
		p.mu.Unlock()
		lsrv.ServeHTTP(w, r)
	}))
	t.Cleanup(lts.Close)
	p.follower.leaderHTTP = lts.URL
	cfg := testConfig(t, p.follower)
	cfg.NodeID = "n2"
	fts := httptest.NewServer(New(cfg))
	t.Cleanup(fts.Close)
	p.leaderURL, p.followerURL = lts.URL, fts.URL
	return p
}

// forwardedBy returns the X-Lockd-Forwarded headers the leader has seen.
func (p *pair) forwardedBy() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// do sends a request to url and returns the status, headers and body.
func do(t *testing.T, method, url, body string, hdr http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestForward_ToLeader checks that a follower proxies leader-only requests
// with their bodies intact and relays the leader's answer, and answers the
// rest itself.
func TestForward_ToLeader(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantLeaderCall           *call // nil: served by the follower
	}{
		{"acquire", "POST", "/v1/locks/a/b/acquire", `{"session":"s1","mode":"shared"}`, 200,
			&call{"Acquire", []any{"a/b", api.AcquireRequest{Session: "s1", Mode: api.ModeShared}}}},
		{"create session", "POST", "/v1/sessions", `{"name":"w"}`, 201,
			&call{"CreateSession", []any{api.CreateSessionRequest{Name: "w", TTL: dur(api.DefaultTTL), LockDelay: durPtr(api.DefaultLockDelay)}}}},
		{"destroy session", "DELETE", "/v1/sessions/s1", "", 200, &call{"DestroySession", []any{"s1"}}},
		{"default read", "GET", "/v1/locks/a?index=5&wait=1s", "", 200,
			&call{"Lock", []any{"a", ReadOptions{Index: 5, Wait: time.Second}}}},
		{"consistent read", "GET", "/v1/elections/e?consistent", "", 200,
			&call{"Election", []any{"e", ReadOptions{Consistent: true}}}},
		{"list sessions", "GET", "/v1/sessions", "", 200, &call{"Sessions", []any{list(ReadOptions{}, api.DefaultListLimit, "")}}},
		{"add member", "POST", "/v1/cluster/members", `{"id":"n3","peer":"h:1","http":"h:2"}`, 200,
			&call{"AddMember", []any{api.Member{ID: "n3", Peer: "h:1", HTTP: "http://h:2", Voter: true}}}},
		{"stale read", "GET", "/v1/locks/a?stale", "", 200, nil},
		{"stale list", "GET", "/v1/sessions?stale=true", "", 200, nil},
		{"cluster", "GET", "/v1/cluster", "", 200, nil},
		{"healthz", "GET", "/healthz", "", 200, nil},
		{"bad query answered locally", "GET", "/v1/locks/a?index=x", "", 400, nil},
		{"unknown query parameter answered locally", "GET", "/v1/locks/a?stael", "", 400, nil},
		{"read of a name ending in a verb, %2F kept", "GET", "/v1/locks/x%2Facquire?index=2&wait=1s", "", 200,
			&call{"Lock", []any{"x/acquire", ReadOptions{Index: 2, Wait: time.Second}}}},
		{"GET of a verb answered locally", "GET", "/v1/elections/e/campaign", "", 405, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNewPair(t)
			status, _, body := do(t, tt.method, p.followerURL+tt.path, tt.body, nil)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tt.wantStatus, body)
			}
			leaderCalls, followerCalls := p.leader.Calls(), p.follower.Calls()
			if tt.wantLeaderCall == nil {
				if len(leaderCalls) != 0 {
					t.Errorf("leader got %v, want nothing", leaderCalls)
				}
				return
			}
			if len(followerCalls) != 0 {
				t.Errorf("follower's Service got %v, want nothing", followerCalls)
			}
			if len(leaderCalls) != 1 || !reflect.DeepEqual(leaderCalls[0], *tt.wantLeaderCall) {
				t.Errorf("leader calls = %#v\nwant [%#v]", leaderCalls, *tt.wantLeaderCall)
			}
			if seen := p.forwardedBy(); len(seen) != 1 || seen[0] != "n2" {
				t.Errorf("X-Lockd-Forwarded at the leader = %q, want [n2]", seen)
			}
		})
	}
}

// TestForward_RelaysLeaderAnswer checks that the leader's status, headers
// and body reach the client unchanged, errors included.
func TestForward_RelaysLeaderAnswer(t *testing.T) {
	p := mustNewPair(t)
	p.leader.err = &api.Error{Code: api.CodeLockDelay, Message: "lock a is in its lock-delay", RetryAfter: 3 * time.Second}
	status, hdr, body := do(t, "POST", p.followerURL+"/v1/locks/a/acquire", `{"session":"s1"}`, nil)
	if status != http.StatusConflict {
		t.Errorf("status = %d, want 409", status)
	}
	if got := hdr.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After = %q, want 3", got)
	}
	assertJSONEqual(t, body, `{"error":"lock a is in its lock-delay","code":"lock_delay"}`)
}

// TestForward_NoLeader checks the 503 answers, each given when nothing
// reached the leader: no leader known, a request that was already forwarded
// (no loops), and a leader that refuses connections.
func TestForward_NoLeader(t *testing.T) {
	tests := []struct {
		name       string
		leaderHTTP string // "-" keeps the working leader
		header     http.Header
		wantMsg    string
	}{
		{"no leader known", "", nil, "no leader is known"},
		{"already forwarded", "-", http.Header{HeaderForwarded: {"n3"}}, "forwarded by n3"},
		{"leader refuses connections", "http://" + refusingAddr(t), nil, "cannot reach the leader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNewPair(t)
			if tt.leaderHTTP != "-" {
				p.follower.leaderHTTP = tt.leaderHTTP
			}
			start := time.Now()
			status, hdr, body := do(t, "POST", p.followerURL+"/v1/locks/a/release", `{"session":"s1"}`, tt.header)
			if status != http.StatusServiceUnavailable {
				t.Fatalf("status = %d, want 503; body %s", status, body)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("answered after %v", d)
			}
			if got := hdr.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After = %q, want 1", got)
			}
			var e api.Error
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != api.CodeNoLeader || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("body = %s, want code no_leader and a message containing %q", body, tt.wantMsg)
			}
			if calls := p.leader.Calls(); len(calls) != 0 {
				t.Errorf("leader got %v", calls)
			}
			if calls := p.follower.Calls(); len(calls) != 0 {
				t.Errorf("follower's Service got %v", calls)
			}
		})
	}
}

// refusingAddr returns a 127.0.0.1 address that refuses connections: a
// socket bound to it, never listening, for the whole test. (A closed
// listener's port may be taken by another test's server meanwhile.)
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// rawLeader is a leader at the TCP level: it reads each request whole,
// reports its path on got, and then either hangs up (hangUp) or keeps the
// connection open without a word until the test ends.
func rawLeader(t *testing.T, hangUp bool) (url string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	paths := make(chan string, 16)
	var conns sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				select {
				case paths <- req.URL.Path:
				default:
				}
				if !hangUp {
					<-done
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), paths
}

// newFollower starts a follower whose fake names leaderHTTP as the leader,
// with the given forwarding limits.
func newFollower(t *testing.T, leaderHTTP string, limits forwardLimits) (*fakeService, string) {
	t.Helper()
	f := &fakeService{leaderHTTP: leaderHTTP}
	cfg := testConfig(t, f)
	cfg.NodeID = "n2"
	srv := New(cfg)
	srv.limits = limits
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return f, ts.URL
}

// setLeader changes whom the fake believes leads.
func (f *fakeService) setLeader(isLeader bool, leaderHTTP string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isLeader, f.leaderHTTP = isLeader, leaderHTTP
}

// TestForward_OutcomeUnknown checks that once a request may have reached
// the leader, a forward that gets no answer is a 504 timeout whose message
// says the outcome is unknown (never 503, which promises that nothing
// happened), and that it comes within a bound whatever the leader does.
func TestForward_OutcomeUnknown(t *testing.T) {
	tests := []struct {
		name    string
		hangUp  bool
		limits  forwardLimits
		then    func(f *fakeService) // after the leader has the request
		wantMsg string
	}{
		{"leader hangs up after reading", true, forwardLimits{}, nil, "failed after the request was sent"},
		{"leader never answers", false, forwardLimits{}, nil, "did not answer within"}, // the default bound: 10s
		{"leader changes meanwhile", false, forwardLimits{},
			func(f *fakeService) { f.setLeader(false, "http://127.0.0.1:1") }, "leader changed"},
		{"this node becomes leader meanwhile", false, forwardLimits{},
			func(f *fakeService) { f.setLeader(true, "") }, "leader changed"},
		{"no leader known for too long", false, forwardLimits{leaderGone: 300 * time.Millisecond},
			func(f *fakeService) { f.setLeader(false, "") }, "lost track of the leader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader, got := rawLeader(t, tt.hangUp)
			f, followerURL := newFollower(t, leader, tt.limits)
			type answer struct {
				status int
				body   string
			}
			ans := make(chan answer, 1)
			start := time.Now()
			go func() {
				req, _ := http.NewRequest("POST", followerURL+"/v1/locks/a/acquire", strings.NewReader(`{"session":"s1"}`))
				req.Header.Set(api.HeaderWait, "0s") // as the client library says it
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					ans <- answer{0, err.Error()}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				ans <- answer{resp.StatusCode, string(b)}
			}()
			select {
			case path := <-got:
				if path != "/v1/locks/a/acquire" {
					t.Fatalf("leader got %q", path)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the request never reached the leader")
			}
			if tt.then != nil {
				tt.then(f)
			}
			var a answer
			select {
			case a = <-ans:
			case <-time.After(30 * time.Second):
				t.Fatal("no answer within 30s")
			}
			if a.status != http.StatusGatewayTimeout {
				t.Fatalf("status = %d, want 504; body %s", a.status, a.body)
			}
			var e api.Error
			if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Code != api.CodeTimeout ||
				!strings.Contains(e.Message, "outcome is unknown") || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("body = %s, want code timeout, \"outcome is unknown\" and %q", a.body, tt.wantMsg)
			}
			t.Logf("answered after %v: %s", time.Since(start).Round(time.Millisecond), e.Message)
		})
	}
}

// TestForward_LimitIncludesWait checks that the bound on the leader's
// answer grows with the request's own wait, as the X-Lockd-Wait header
// says it: a blocking acquire or campaign the leader answers after longer
// than the margin, but within its wait, is relayed. Without the header the
// follower cannot know the wait (it does not decode the body) and allows
// the longest; on a route that does not block, the header is ignored.
func TestForward_LimitIncludesWait(t *testing.T) {
	const margin, leaderTakes = 300 * time.Millisecond, time.Second
	for _, tt := range []struct {
		path, wait, body string
		wantStatus       int
	}{
		{"/v1/locks/a/acquire", "3s", `{"session":"s1","wait":"3s"}`, http.StatusOK},
		{"/v1/locks/a/acquire", "0s", `{"session":"s1"}`, http.StatusGatewayTimeout},
		{"/v1/locks/a/acquire", "", `{"session":"s1","wait":"3s"}`, http.StatusOK},
		{"/v1/locks/a/acquire", "", `{"session":"s1"}`, http.StatusOK},
		{"/v1/elections/e/campaign", "3s", `{"session":"s1","value":"v","wait":"3s"}`, http.StatusOK},
		{"/v1/elections/e/campaign", "0s", `{"session":"s1","value":"v"}`, http.StatusGatewayTimeout},
		{"/v1/locks/a/release", "3s", `{"session":"s1"}`, http.StatusGatewayTimeout},
	} {
		leader := newLeaderFake()
		leader.onCall = func(ctx context.Context) error {
			select {
			case <-time.After(leaderTakes):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		lts := httptest.NewServer(mustNewServer(t, leader, nil))
		t.Cleanup(lts.Close)
		_, followerURL := newFollower(t, lts.URL, forwardLimits{margin: margin})
		var hdr http.Header
		if tt.wait != "" {
			hdr = http.Header{api.HeaderWait: {tt.wait}}
		}
		status, _, body := do(t, "POST", followerURL+tt.path, tt.body, hdr)
		if status != tt.wantStatus {
			t.Errorf("%s %s, header %q: status = %d, want %d; body %s", tt.path, tt.body, tt.wait, status, tt.wantStatus, body)
		}
	}
}

// TestForward_HeaderWaitMustMatchBody checks that the leader refuses an
// acquire or campaign whose X-Lockd-Wait header says another wait than its
// body: a follower bounds the request by the header, so a header that
// understated the wait would cut a legitimate wait short with a 504. The
// refusal is the same sent to the leader or through a follower.
func TestForward_HeaderWaitMustMatchBody(t *testing.T) {
	for _, tt := range []struct {
		path, wait, body string
		wantStatus       int
		wantMsg          string
	}{
		{"/v1/locks/a/acquire", "1s", `{"session":"s1","wait":"1m"}`, 400, "X-Lockd-Wait header says 1s and the body's wait 1m0s"},
		{"/v1/locks/a/acquire", "1s", `{"session":"s1"}`, 400, "X-Lockd-Wait header says 1s and the body's wait 0s"},
		{"/v1/elections/e/campaign", "2s", `{"session":"s1","value":"v","wait":"1s"}`, 400, "they must be the same"},
		{"/v1/locks/a/acquire", "later", `{"session":"s1"}`, 400, "bad X-Lockd-Wait header"},
		{"/v1/locks/a/acquire", "60s", `{"session":"s1","wait":"1m"}`, 200, ""},
		{"/v1/elections/e/campaign", "0s", `{"session":"s1","value":"v"}`, 200, ""},
	} {
		p := mustNewPair(t)
		for _, base := range []string{p.leaderURL, p.followerURL} {
			status, _, body := do(t, "POST", base+tt.path, tt.body, http.Header{api.HeaderWait: {tt.wait}})
			var e api.Error
			_ = json.Unmarshal([]byte(body), &e)
			if status != tt.wantStatus || tt.wantMsg != "" && (e.Code != api.CodeBadRequest || !strings.Contains(e.Message, tt.wantMsg)) {
				t.Errorf("%s %s, header %q: %d %s; want %d and %q", tt.path, tt.body, tt.wait, status, body, tt.wantStatus, tt.wantMsg)
			}
		}
		if n := len(p.leader.Calls()); tt.wantStatus != 200 && n != 0 {
			t.Errorf("%s %s, header %q: the leader's Service got %v", tt.path, tt.body, tt.wait, p.leader.Calls())
		}
	}
}

// TestForwardWait checks how long a forwarded request is allowed to block:
// read from the query or the X-Lockd-Wait header, never from the body,
// and the longest wait the API allows for an acquire or campaign that
// does not say its wait outside the body.
func TestForwardWait(t *testing.T) {
	s := New(testConfig(t, &fakeService{}))
	tests := []struct {
		method, target, wait, body string // wait: the X-Lockd-Wait header, if not ""
		want                       time.Duration
		wantErr                    string
	}{
		{"POST", "/v1/locks/a/acquire", "90s", `{"session":"s","wait":"90s","seq":3}`, 90 * time.Second, ""},
		{"POST", "/v1/elections/e/campaign", "250ms", `{"session":"s","value":"v","wait":"250ms"}`, 250 * time.Millisecond, ""},
		{"POST", "/v1/locks/a/acquire", "0s", `{"session":"s"}`, 0, ""},
		{"POST", "/v1/locks/a/acquire", "", `{"session":"s","wait":"1s"}`, api.MaxWait, ""},
		{"POST", "/v1/elections/e/campaign", "", `{"session":"s","value":"v"}`, api.MaxWait, ""},
		{"POST", "/v1/locks/a/acquire", "1h", `{"session":"s","wait":"1h"}`, 0, "out of range"},
		{"POST", "/v1/locks/a/acquire", "-5s", `{"session":"s"}`, 0, "out of range"},
		{"POST", "/v1/locks/a/acquire", "soon", `{"session":"s"}`, 0, "bad X-Lockd-Wait header"},
		{"GET", "/v1/locks/a?index=7&wait=30s", "", "", 30 * time.Second, ""},
		{"GET", "/v1/sessions?wait=2s&index=1", "", "", 2 * time.Second, ""},
		{"GET", "/v1/locks/a", "", "", 0, ""},
		{"POST", "/v1/locks/a/release", "30s", `{"session":"s","wait":"90s"}`, 0, ""},
		{"POST", "/v1/sessions/s1/keepalive", "", "", 0, ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
		if tt.wait != "" {
			r.Header.Set(api.HeaderWait, tt.wait)
		}
		got, err := forwardWait(r, routeOf(t, s, r))
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("forwardWait(%s %s, header %q) = %v, %v; want %v, error %q", tt.method, tt.target, tt.wait, got, err, tt.want, tt.wantErr)
		}
		if b, _ := io.ReadAll(r.Body); string(b) != tt.body {
			t.Errorf("forwardWait(%s %s) read the body: %q left of %q", tt.method, tt.target, b, tt.body)
		}
	}
	r := httptest.NewRequest("POST", "/v1/locks/a/acquire", nil)
	r.Header[api.HeaderWait] = []string{"1s", "2s"}
	if _, err := forwardWait(r, routeOf(t, s, r)); err == nil || !strings.Contains(err.Error(), "given 2 times") {
		t.Errorf("forwardWait with the header twice: %v, want an error", err)
	}
}

// routeOf returns the entry of the routing table that serves r.
func routeOf(t *testing.T, s *Server, r *http.Request) route {
	t.Helper()
	var m mux.RouteMatch
	if s.router.Match(r, &m) && m.MatchErr == nil {
		path, _ := m.Route.GetPathTemplate()
		for _, rt := range s.routes() {
			if rt.path == path && rt.method == r.Method {
				return rt
			}
		}
	}
	t.Fatalf("no route serves %s %s", r.Method, r.URL)
	return route{}
}

// TestReadAhead checks that the follower reads a body whole before it
// forwards it, and leaves it intact for the leader, a body longer than
// the API allows included.
func TestReadAhead(t *testing.T) {
	for _, body := range []string{`{"session":"s","wait":"90s","seq":3}`, "not json", "", strings.Repeat("x", api.MaxBody+100)} {
		r := httptest.NewRequest("POST", "/v1/locks/a/acquire", strings.NewReader(body))
		if err := readAhead(r); err != nil {
			t.Errorf("readAhead: %v", err)
		}
		if b, err := io.ReadAll(r.Body); err != nil || string(b) != body {
			t.Errorf("body after readAhead = %d bytes (%v), want %d", len(b), err, len(body))
		}
	}
}

// TestForward_LeaderServesForwarded checks that the leader serves a request
// that carries X-Lockd-Forwarded: the header stops loops, not service.
func TestForward_LeaderServesForwarded(t *testing.T) {
	p := mustNewPair(t)
	status, _, body := do(t, "POST", p.leaderURL+"/v1/locks/a/release", `{"session":"s1"}`, http.Header{HeaderForwarded: {"n2"}})
	if status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", status, body)
	}
	if len(p.leader.Calls()) != 1 {
		t.Errorf("leader calls = %v, want one", p.leader.Calls())
	}
}

// TestForward_ClientCancel checks that a blocking request forwarded to the
// leader ends there when the client gives up.
func TestForward_ClientCancel(t *testing.T) {
	p := mustNewPair(t)
	started, cancelled := make(chan struct{}), make(chan struct{})
	p.leader.onCall = func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", p.followerURL+"/v1/locks/a/acquire", strings.NewReader(`{"session":"s1","wait":"5m"}`))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, started, "the acquire to reach the leader")
	cancel()
	waitFor(t, cancelled, "the leader's request context to be cancelled")
	if err := <-errc; err == nil {
		t.Errorf("client request succeeded after cancel")
	}
}

// waitFor fails the test unless ch closes within 10 seconds.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
