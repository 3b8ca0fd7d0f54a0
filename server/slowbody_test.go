package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/connlimit"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// slowAnswer is what one slow-body connection got: the status of the
// answer (0: closed without one) and when the connection ended.
type slowAnswer struct {
	status int
	code   string
	ended  time.Duration
	err    error
}

// slowBody dials addr from the local IP from, sends a request whose
// Content-Length promises more than it sends, and reads until the node
// answers or closes the connection (at most within).
func slowBody(from, addr string, within time.Duration) slowAnswer {
	return slowBodyAuth(from, addr, "/v1/sessions", "", within)
}

// slowBodyAuth is slowBody to path with an Authorization header (none if
// auth is empty).
func slowBodyAuth(from, addr, path, auth string, within time.Duration) slowAnswer {
	start := time.Now()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return slowAnswer{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(within))
	head := "POST " + path + " HTTP/1.1\r\nHost: lockd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n{\"ttl\":"); err != nil {
		return slowAnswer{ended: time.Since(start)} // refused before the request was written
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return slowAnswer{err: fmt.Errorf("still open after %v", within)}
		}
		return slowAnswer{ended: time.Since(start)} // closed without an answer
	}
	var e api.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	_ = resp.Body.Close()
	// The node closes the connection after such an answer.
	if _, err := io.Copy(io.Discard, c); err != nil {
		return slowAnswer{err: fmt.Errorf("after a %d answer: %w", resp.StatusCode, err)}
	}
	return slowAnswer{status: resp.StatusCode, code: e.Code, ended: time.Since(start)}
}

// TestSlowBodies_CapsAndTheBodyTimeoutKeepTheNodeServing: one client
// address opens many connections that send headers and part of a body,
// then nothing. The node holds at most its per-client limit of them,
// answers the rest 429 (or closes them) at once, answers each held one 408
// request_timeout and closes it once the body timeout has run out, and
// serves another client all along.
func TestSlowBodies_CapsAndTheBodyTimeoutKeepTheNodeServing(t *testing.T) {
	const perClient, attackers, bodyTimeout = 16, 200, time.Second
	reg := prometheus.NewRegistry()
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.HTTPConns = connlimit.Limits{PerClient: perClient, Total: 1000}
		cfg.HTTPBodyTimeout = bodyTimeout
		cfg.Metrics = reg
	})
	c.WaitLeader()
	addr := strings.TrimPrefix(c.URL(0), "http://")

	answers := make([]slowAnswer, attackers)
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = slowBody("127.0.0.9", addr, 20*time.Second)
		}()
	}
	// While they hold what they may, another client is served.
	servertest.WaitFor(t, 10*time.Second, "the node to hold the slow connections it allows", func() bool {
		return openConns(t, reg) >= perClient
	})
	other := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	for range 5 {
		resp, err := other.Post(c.URL(0)+"/v1/sessions", "application/json", strings.NewReader(`{"ttl":"10s"}`))
		if err != nil {
			t.Fatalf("another client, while the slow bodies are held: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("another client, while the slow bodies are held: %s", resp.Status)
		}
	}
	wg.Wait()

	held, refused := 0, 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("slow connection %d: %v", i, a.err)
		case a.status == http.StatusRequestTimeout && a.code == api.CodeRequestTimeout:
			held++
			// Liveness, not speed: the bound is the timeout plus a slack
			// that a loaded machine cannot reach.
			if a.ended < bodyTimeout || a.ended > bodyTimeout+8*time.Second {
				t.Errorf("slow connection %d: answered 408 after %v, want about %v", i, a.ended, bodyTimeout)
			}
		case a.status == http.StatusTooManyRequests && a.code == api.CodeTooMany, a.status == 0:
			refused++
		default:
			t.Errorf("slow connection %d: answered %d %q", i, a.status, a.code)
		}
	}
	if held == 0 || held > perClient || held+refused != attackers {
		t.Fatalf("%d connections held to the body timeout and %d refused, of %d; want at most %d held, the rest refused",
			held, refused, attackers, perClient)
	}
	t.Logf("%d slow connections held until the body timeout, %d refused at once", held, refused)
	if got := metric(t, reg, "lockd_http_body_timeouts_total", nil); int(got) != held {
		t.Errorf("lockd_http_body_timeouts_total = %v, want %d", got, held)
	}
	if got := refusedConns(t, reg, "per_client"); int(got) < refused {
		t.Errorf("lockd_connections_refused_total{limit=per_client} = %v, want at least %d", got, refused)
	}
	servertest.WaitFor(t, 5*time.Second, "every slow connection closed", func() bool {
		return openConns(t, reg) <= 1 // the other client's kept-alive connection
	})
}

// TestConnLimits_TotalAnswers503: past the total limit, whatever the
// address, the API port answers 503 overloaded with Retry-After and
// closes the connection.
func TestConnLimits_TotalAnswers503(t *testing.T) {
	const total = 8
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.HTTPConns = connlimit.Limits{PerClient: 100, Total: total}
	})
	c.WaitLeader()
	addr := strings.TrimPrefix(c.URL(0), "http://")
	var held []net.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for i := range total {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.0.%d", 10+i))}}
		h, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	// The node counts a connection once it has accepted it: ask until
	// it has accepted all of them.
	servertest.WaitFor(t, 10*time.Second, "503 overloaded past the total", func() bool {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.30")}}
		cn, err := d.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer cn.Close()
		_ = cn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(cn, "GET /v1/cluster HTTP/1.1\r\nHost: lockd\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var e api.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode == http.StatusOK {
			return false
		}
		if resp.StatusCode != http.StatusServiceUnavailable || e.Code != api.CodeOverloaded || resp.Header.Get("Retry-After") == "" || !resp.Close {
			t.Fatalf("past the total: %s %q, Retry-After %q, close %v; want 503 overloaded, Retry-After, Connection: close",
				resp.Status, e.Code, resp.Header.Get("Retry-After"), resp.Close)
		}
		return true
	})
}

// metric returns the value of the metric name with labels gathered from
// reg, or 0 if there is none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func openConns(t *testing.T, reg *prometheus.Registry) float64 {
	return metric(t, reg, "lockd_connections_open", map[string]string{"port": "api"})
}

func refusedConns(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	return metric(t, reg, "lockd_connections_refused_total", map[string]string{"port": "api", "limit": limit})
}

// TestSlowBodies_NoTokenIsRefusedBeforeTheBody: with ACLs on, a request
// without a token, or with one the node knows and that does not allow it,
// is answered before its body is read, on the leader and on a follower
// (which would otherwise read the body to forward it): the body never
// arrives here, so an answer other than 408 shows the order.
func TestSlowBodies_NoTokenIsRefusedBeforeTheBody(t *testing.T) {
	c, leader := aclCluster(t, 3)
	ac := aclClient{t: t, base: c.URL(leader)}
	var ro api.Token
	rule, _ := acl.ParseRule("lock:a/:read")
	ac.must(bearer(bootSecret), "POST", "/v1/acl/tokens", api.CreateTokenRequest{Rules: []acl.Rule{rule}}, http.StatusCreated, &ro)
	fol := c.Follower(leader)
	servertest.WaitFor(t, 10*time.Second, "the follower to know the new token", func() bool {
		_, ok := c.Nodes[fol].Node().ResolveToken(ro.Secret)
		return ok
	})
	for _, node := range []int{leader, fol} {
		addr := strings.TrimPrefix(c.URL(node), "http://")
		for _, tc := range []struct{ auth, path, code string }{
			{"", "/v1/sessions", api.CodeUnauthorized},
			{"Basic abc", "/v1/sessions", api.CodeUnauthorized},
			{bearer(ro.Secret), "/v1/locks/b/x/acquire", api.CodeForbidden},
		} {
			got := slowBodyAuth("127.0.0.9", addr, tc.path, tc.auth, 30*time.Second)
			if got.err != nil || got.code != tc.code {
				t.Errorf("node %d, POST %s with %q and a body that never arrives: %d %q (%v), want %s",
					node, tc.path, tc.auth, got.status, got.code, got.err, tc.code)
			}
		}
	}
}

// TestConnLimits_PeerPortClosesPastItsLimit: the peer port holds at most
// its per-client limit of connections from one address and closes the
// rest at once; the node goes on serving.
func TestConnLimits_PeerPortClosesPastItsLimit(t *testing.T) {
	const perClient, dials = 4, 12
	reg := prometheus.NewRegistry()
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.PeerConns = connlimit.Limits{PerClient: perClient}
		cfg.Metrics = reg
	})
	c.WaitLeader()
	var conns []net.Conn
	for range dials {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}
		cn, err := d.Dial("tcp", c.Nodes[0].PeerAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
		conns = append(conns, cn)
	}
	// A connection held sends nothing and is closed after the peer port's
	// header timeout (5 s); one past the limit at once.
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, cn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := cn.Read(make([]byte, 1)); err != nil {
				if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
					closed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := int(closed.Load()); n != dials-perClient {
		t.Errorf("%d of %d silent connections closed within 2 s, want the %d past the limit", n, dials, dials-perClient)
	}
	if got := metric(t, reg, "lockd_connections_refused_total", map[string]string{"port": "peer", "limit": "per_client"}); int(got) != dials-perClient {
		t.Errorf("lockd_connections_refused_total{port=peer,limit=per_client} = %v, want %d", got, dials-perClient)
	}
	newAPI(t, c, 0).session(10*time.Second, 0) // still serving
}
