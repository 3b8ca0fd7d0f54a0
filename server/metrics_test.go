package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// series returns the sample lines of text (no comments).
func series(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func hasLine(text, prefix string) bool {
	for _, l := range series(text) {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// /metrics shows the node's state and its HTTP answers by route, and its
// series do not grow with the number of lock names.
func TestMetrics_ServedAndBounded(t *testing.T) {
	c := servertest.NewWith(t, 3, func(_ int, cfg *server.Config) { cfg.Metrics = prometheus.NewRegistry() })
	leader := c.WaitLeader()
	follower := c.Follower(leader)
	ac := aclClient{t: t, base: c.URL(follower)}
	var s api.Session
	ac.must("", "POST", "/v1/sessions", api.CreateSessionRequest{}, 201, &s)
	cycle := func(name string) {
		ac.must("", "POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: s.ID}, 200, nil)
		ac.must("", "POST", "/v1/locks/"+name+"/release", api.SessionRequest{Session: s.ID}, 200, nil)
	}
	cycle("m/0")
	ac.must("", "PUT", "/v1/kv/m/k", api.KVPutRequest{Value: []byte("abc")}, 200, nil)
	lead := scrape(t, c.URL(leader))
	for _, want := range []string{
		"lockd_leader 1",
		"lockd_sessions 1",
		"lockd_sessions_created_total 1",
		`lockd_http_requests_total{code="200",method="POST",route="/v1/locks/{name:.*}/acquire"} 1`,
		"lockd_master_lease_remaining_seconds 0.",
		"lockd_master_lease_failures_total 0",
		"lockd_kv_keys 1",
		"lockd_kv_bytes 6",
		"lockd_kv_history_events 1",
		"lockd_kv_watch_compacted_total 0",
		"lockd_snapshot_in_progress 0",
		"lockd_snapshots_total 0",
	} {
		if !hasLine(lead, want) {
			t.Errorf("leader's /metrics has no line %q", want)
		}
	}
	fol := scrape(t, c.URL(follower))
	var forwarded int
	for _, l := range series(fol) {
		_, _ = fmt.Sscanf(l, "lockd_http_forwarded_total %d", &forwarded)
	}
	// The session and the cycle, and the follower's own registration.
	if !hasLine(fol, "lockd_leader 0") || forwarded < 3 {
		t.Errorf("follower's /metrics: want lockd_leader 0 and at least 3 forwarded requests, got\n%s", strings.Join(series(fol), "\n"))
	}
	before := len(series(scrape(t, c.URL(leader))))
	for i := 1; i <= 50; i++ {
		cycle(fmt.Sprintf("m/%d", i))
	}
	// A scrape adds its own route's series once; nothing else may grow.
	if after := len(series(scrape(t, c.URL(leader)))); after > before+len(series(""))+3 {
		t.Errorf("series went from %d to %d after 50 more lock names", before, after)
	}
}

// With ACLs on, /metrics needs a token like everything else.
func TestMetrics_NeedsATokenWithACLs(t *testing.T) {
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.Metrics = prometheus.NewRegistry()
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = bootSecret
	})
	ac := aclClient{t: t, base: c.URL(c.WaitLeader())}
	servertest.WaitFor(t, 10e9, "the bootstrap token", func() bool {
		return ac.do(bearer(bootSecret), "GET", "/metrics", nil).status == 200
	})
	if a := ac.do("", "GET", "/metrics", nil); a.status != 401 {
		t.Fatalf("/metrics without a token: %d", a.status)
	}
}

// A leader whose master lease runs out while it still leads (here its
// clock jumps ahead past the lease's end) counts one suspension, logs the
// loss and the renewal once each, and serves again after the next round.
func TestMetrics_LeaseSuspensionCountedAndLogged(t *testing.T) {
	book := &logBook{}
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		cfg.Metrics = prometheus.NewRegistry()
		cfg.Logger = slog.New(book.handler(fmt.Sprintf("n%d", i+1)))
	})
	li := c.WaitLeader()
	s := c.Nodes[li]
	if !hasLine(scrape(t, c.URL(li)), "lockd_master_lease_suspensions_total 0") {
		t.Fatal("a healthy leader counts a suspension")
	}
	s.Clock().Set(10*time.Second, 1)
	servertest.WaitFor(t, 10*time.Second, "the suspension to be counted and the lease renewed", func() bool {
		return hasLine(scrape(t, c.URL(li)), "lockd_master_lease_suspensions_total 1") && serving(s)
	})
	for _, msg := range []string{"master lease lost: it ran out before a renewal confirmed a quorum; not serving", "master lease regained; serving again"} {
		if ls := book.find(s.ID(), msg); len(ls) != 1 || ls[0].attrs["term"] == "" {
			book.dump(t)
			t.Fatalf("%q logged %d times (want once, with the term)", msg, len(ls))
		}
	}
	if ok, _ := s.Node().Leader(); !ok {
		t.Fatal("the node lost leadership: the test wanted only its lease to lapse")
	}
}
