package system

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockd/lockd/api"
)

// The binary serves /metrics with the Go runtime's metrics and
// hashicorp/raft's own, bridged from go-metrics, beside lockd's.
func TestMetrics_BinaryServesRaftAndRuntime(t *testing.T) {
	c := mustStartCluster(t, 1)
	newSession(t, c.procs[0].http, 10*time.Second)
	waitFor(t, 10*time.Second, "raft's commit time in /metrics", func() bool {
		resp, err := httpClient.Get(c.procs[0].http + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text := string(b)
		return strings.Contains(text, "\nlockd_raft_commitTime_count ") && strings.Contains(text, "\ngo_goroutines ") &&
			strings.Contains(text, "\nlockd_leader 1\n") && strings.Contains(text, "\nlockd_sessions_created_total 1\n")
	})
}

// metrics is one parsed scrape of /metrics.
type metrics struct {
	t    *testing.T
	node string
	fams map[string]*dto.MetricFamily
}

// scrapeMetrics reads base's /metrics with the Prometheus text parser.
func scrapeMetrics(t *testing.T, base string) metrics {
	t.Helper()
	resp, err := httpClient.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", base, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s/metrics: %v", base, err)
	}
	return metrics{t: t, node: base, fams: fams}
}

// series returns the series of family name whose labels include want
// (label=value pairs); it fails the test if the family is missing.
func (m metrics) series(name string, want ...string) []*dto.Metric {
	m.t.Helper()
	f, ok := m.fams[name]
	if !ok {
		m.t.Fatalf("%s: no metric %s", m.node, name)
	}
	var out []*dto.Metric
	for _, s := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			match = match && labels[k] == v
		}
		if match {
			out = append(out, s)
		}
	}
	return out
}

// value returns the sum of the matching series' values: a counter's or a
// gauge's value, a histogram's or a summary's count of observations.
func (m metrics) value(name string, want ...string) float64 {
	m.t.Helper()
	ss := m.series(name, want...)
	if len(ss) == 0 {
		m.t.Fatalf("%s: no series of %s with %v", m.node, name, want)
	}
	var v float64
	for _, s := range ss {
		switch {
		case s.Counter != nil:
			v += s.Counter.GetValue()
		case s.Gauge != nil:
			v += s.Gauge.GetValue()
		case s.Histogram != nil:
			v += float64(s.Histogram.GetSampleCount())
		case s.Summary != nil:
			v += float64(s.Summary.GetSampleCount())
		case s.Untyped != nil:
			v += s.Untyped.GetValue()
		}
	}
	return v
}

// check fails the test unless ok(value of name).
func (m metrics) check(name, what string, ok func(float64) bool, want ...string) {
	m.t.Helper()
	if v := m.value(name, want...); !ok(v) {
		m.t.Errorf("%s: %s%v = %v, want %s", m.node, name, want, v, what)
	}
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
func equal(n float64) func(float64) bool   { return func(v float64) bool { return v == n } }

// acquireWait sends an acquire that may wait, and returns its status and
// error code.
func acquireWait(base, name, session string, wait time.Duration) (int, string) {
	var r api.AcquireResponse
	st, e := doJSON(base, "POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session, Wait: api.Duration(wait)}, &r)
	return st, e.Code
}

func release(t *testing.T, base, name, session string) {
	t.Helper()
	mustDo(t, base, "POST", "/v1/locks/"+name+"/release", api.SessionRequest{Session: session}, nil)
}

// TestMetrics_BusyClusterShowsEveryMetric runs a lock workload on a
// 3-node cluster (sessions, contended acquires that queue and are handed
// over, an expiry, a lock-delay refusal, an election) and checks, in the
// leader's and a follower's /metrics as the Prometheus text parser reads
// them, every metric docs/operations.md lists with a plausible value.
func TestMetrics_BusyClusterShowsEveryMetric(t *testing.T) {
	c := mustStartCluster(t, 3)
	li := c.waitLeader(15 * time.Second)
	fi := (li + 1) % 3
	lead, fol := c.procs[li].http, c.procs[fi].http
	fronts := []string{lead, fol}

	// Contention: every worker acquires the same lock, waiting for it,
	// through the leader or a follower, and releases it.
	const workers, rounds = 4, 8
	sessions := make([]string, workers)
	for i := range sessions {
		sessions[i] = newSession(t, fronts[i%2], time.Minute)
		mustDo(t, fronts[i%2], "POST", "/v1/sessions/"+sessions[i]+"/keepalive", nil, nil)
	}
	var acked, released atomic.Int64
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			base := fronts[i%2]
			for range rounds {
				if st, code := acquireWait(base, "hot", s, 20*time.Second); st != 200 {
					t.Errorf("acquire hot: %d %s", st, code)
					return
				}
				acked.Add(1)
				time.Sleep(2 * time.Millisecond)
				if st, e := doJSON(base, "POST", "/v1/locks/hot/release", api.SessionRequest{Session: s}, nil); st != 200 {
					t.Errorf("release hot: %d %s", st, e.Code)
					return
				}
				released.Add(1)
			}
		})
	}
	wg.Wait()

	// One hand-off for certain: a waiter queued behind a holder gets the
	// lock when the holder releases it.
	a, b := sessions[0], sessions[1]
	if st, code := acquireWait(lead, "baton", a, 0); st != 200 {
		t.Fatalf("acquire baton: %d %s", st, code)
	}
	acked.Add(1)
	got := make(chan int, 1)
	go func() { st, _ := acquireWait(fol, "baton", b, 20*time.Second); got <- st }()
	waitFor(t, 10*time.Second, "a waiter on baton", func() bool {
		var l api.Lock
		st, _ := doJSON(lead, "GET", "/v1/locks/baton", nil, &l)
		return st == 200 && len(l.Waiters) == 1
	})
	release(t, lead, "baton", a)
	released.Add(1)
	if st := <-got; st != 200 {
		t.Fatalf("queued acquire of baton: %d", st)
	}
	acked.Add(1)
	release(t, lead, "baton", b)
	released.Add(1)

	// An expiry with a lock-delay, and an acquire refused inside it.
	delay := api.Duration(30 * time.Second)
	var doomed api.Session
	mustDo(t, lead, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(api.MinTTL), LockDelay: &delay}, &doomed)
	if st, code := acquireWait(lead, "delayed", doomed.ID, 0); st != 200 {
		t.Fatalf("acquire delayed: %d %s", st, code)
	}
	acked.Add(1)
	waitFor(t, 15*time.Second, "a lock_delay refusal after the holder expired", func() bool {
		st, code := acquireWait(lead, "delayed", a, 0)
		return st == http.StatusConflict && code == api.CodeLockDelay
	})
	released.Add(1) // the expiry ended the holding

	// What stays: one lock held, one election led, nobody queued.
	if st, code := acquireWait(fol, "final", a, 0); st != 200 {
		t.Fatalf("acquire final: %d %s", st, code)
	}
	acked.Add(1)
	mustDo(t, lead, "POST", "/v1/elections/leader/campaign", api.CampaignRequest{Session: b, Value: "me"}, nil)

	m := scrapeMetrics(t, lead)
	m.check("lockd_leader", "1", equal(1))
	m.check("lockd_raft_term", ">= 1", atLeast(1))
	commit, applied := m.value("lockd_raft_commit_index"), m.value("lockd_raft_applied_index")
	if applied < 1 || applied > commit+5 {
		t.Errorf("leader: commit index %v, applied %v: want applied >= 1 and no more than the commit index (a few entries of slack)", commit, applied)
	}
	m.check("lockd_master_lease_remaining_seconds", "> 0", func(v float64) bool { return v > 0 })
	m.check("lockd_master_lease_failures_total", ">= 0", atLeast(0))
	m.check("lockd_master_lease_suspensions_total", ">= 0", atLeast(0))
	m.check("lockd_sessions", fmt.Sprint(workers), equal(workers))
	m.check("lockd_sessions_created_total", ">= workers+1", atLeast(workers+1))
	m.check("lockd_sessions_expired_total", ">= 1", atLeast(1))
	m.check("lockd_keepalives_total", ">= workers", atLeast(workers))
	for _, kind := range []string{"kind=promote", "kind=demote", "kind=remove"} {
		m.check("lockd_autopilot_changes_total", "0 without --voters", equal(0), kind)
	}
	m.check("lockd_blocking_queries", "0", equal(0))
	m.check("lockd_locks_held", "1 (final; delayed is in its lock-delay, held by nobody)", equal(1))
	m.check("lockd_lock_holders", "1", equal(1))
	m.check("lockd_lock_waiters", "0", equal(0))
	m.check("lockd_elections_led", "1", equal(1))
	m.check("lockd_election_waiters", "0", equal(0))
	grants := m.value("lockd_lock_grants_total")
	if n := float64(acked.Load()); grants < n {
		t.Errorf("leader: %v grants, fewer than the %v acquires acknowledged", grants, n)
	}
	m.check("lockd_lock_grants_total", ">= 1", atLeast(1), "kind=immediate")
	m.check("lockd_lock_grants_total", ">= 1 (baton at least)", atLeast(1), "kind=handoff")
	m.check("lockd_lock_delay_refusals_total", ">= 1", atLeast(1))
	m.check("lockd_promise_vote_refusals_total", "present", atLeast(0))
	m.check("lockd_promise_timeout_now_refusals_total", "present", atLeast(0))
	m.check("lockd_lock_acquire_wait_seconds", "a count of at least the acquires acknowledged", atLeast(float64(acked.Load())))
	m.check("lockd_lock_hold_seconds", "a count of at least the holdings ended", atLeast(float64(released.Load())))
	acquireRoute := []string{"route=/v1/locks/{name:.*}/acquire", "method=POST"}
	m.check("lockd_http_requests_total", ">= acquires acknowledged", atLeast(float64(acked.Load())), append(acquireRoute, "code=200")...)
	m.check("lockd_http_requests_total", ">= 1 (the refusal)", atLeast(1), append(acquireRoute, "code=409")...)
	m.check("lockd_http_request_duration_seconds", "> 0 observations", atLeast(1), "route=/v1/locks/{name:.*}/acquire")
	m.check("lockd_http_forwarded_total", "present", atLeast(0))
	// Commit and apply latency, from hashicorp/raft through go-metrics.
	m.check("lockd_raft_commitTime", "> 0 observations", atLeast(1))
	m.check("lockd_raft_fsm_applyBatch", "> 0 observations", atLeast(1))
	m.check("lockd_raft_leader_dispatchLog", "> 0 observations", atLeast(1))
	m.check("lockd_raft_state_candidate", ">= 1 (it was elected)", atLeast(1))
	m.check("go_goroutines", "> 0", atLeast(1))
	m.check("process_resident_memory_bytes", "> 0", atLeast(1))

	// A follower shows the same state once it has applied it, and what it
	// forwarded.
	var f metrics
	waitFor(t, 10*time.Second, "the follower to apply the last entries", func() bool {
		f = scrapeMetrics(t, fol)
		return f.value("lockd_raft_applied_index") >= applied && f.value("lockd_elections_led") == 1
	})
	f.check("lockd_leader", "0", equal(0))
	f.check("lockd_master_lease_remaining_seconds", "0", equal(0))
	f.check("lockd_raft_term", "the leader's", equal(m.value("lockd_raft_term")))
	f.check("lockd_sessions", fmt.Sprint(workers), equal(workers))
	f.check("lockd_locks_held", "1", equal(1))
	f.check("lockd_lock_waiters", "0", equal(0))
	f.check("lockd_http_forwarded_total", ">= the follower's share of the workload", atLeast(workers/2*rounds))
	f.check("lockd_http_requests_total", "> 0", atLeast(1), append(acquireRoute, "code=200")...)
	f.check("lockd_raft_fsm_applyBatch", "> 0 observations", atLeast(1))
	// Events are counted by the node that led: this one never did since
	// the workload began.
	f.check("lockd_lock_grants_total", "0", equal(0))
	f.check("lockd_sessions_created_total", "0", equal(0))
}

// startClassic starts n lockd processes in a classic mode with only
// --initial-cluster: no --cluster-http, so the members learn each
// other's HTTP addresses over the peer port.
func startClassic(t *testing.T, n int, alg string) *procCluster {
	t.Helper()
	bin := mustBuild(t)
	dir := t.TempDir()
	c := &procCluster{t: t}
	addrs := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("n%d=%s", i+1, addrs[2*i]))
	}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		args := []string{bin, "serve", "--id", id, "--http", addrs[2*i+1], "--peer", addrs[2*i],
			"--data", filepath.Join(dir, id), "--initial-cluster", strings.Join(initial, ","), "--election", alg}
		c.procs = append(c.procs, &proc{t: t, id: id, args: args, http: "http://" + addrs[2*i+1], logPath: filepath.Join(dir, id+".log")})
	}
	t.Cleanup(c.killAll)
	for _, p := range c.procs {
		p.start()
	}
	return c
}

// A bully cluster started without --cluster-http: a member forwards to
// the coordinator at the address it told over the peer port, again after
// the coordinator dies and another takes over, and the members'
// /metrics show the election counters.
func TestClassic_LearnsHTTPAddressesAndShowsElectionMetrics(t *testing.T) {
	c := startClassic(t, 3, "bully")
	if coord := c.waitLeader(15 * time.Second); coord != 2 {
		t.Fatalf("bully elected n%d, want n3", coord+1)
	}
	front := c.procs[0].http
	sid := newSession(t, front, time.Minute)
	if _, st, e := acquire(front, "jobs", sid); st != 200 {
		t.Fatalf("acquire through n1: %d %s %s", st, e.Code, e.Message)
	}
	var cl api.Cluster
	mustDo(t, front, "GET", "/v1/cluster", nil, &cl)
	for _, m := range cl.Members {
		if want := c.procs[m.ID[1]-'1'].http; m.HTTP != want {
			t.Errorf("n1 lists %s at %q, want %q (told over the peer port)", m.ID, m.HTTP, want)
		}
	}

	var n1, n3 metrics
	waitFor(t, 5*time.Second, "a heartbeat from n3 to n1", func() bool {
		n1, n3 = scrapeMetrics(t, front), scrapeMetrics(t, c.procs[2].http)
		return n1.value("lockd_classic_messages_received_total", "kind=heartbeat") > 0
	})
	n3.check("lockd_leader", "1", equal(1))
	n1.check("lockd_leader", "0", equal(0))
	n3.check("lockd_classic_messages_sent_total", "> 0", atLeast(1), "kind=heartbeat")
	n3.check("lockd_classic_messages_sent_total", "> 0 (to n1 and n2 at least once)", atLeast(1), "kind=coordinator")
	n1.check("lockd_classic_messages_received_total", "> 0", atLeast(1), "kind=heartbeat")
	n1.check("lockd_classic_messages_received_total", "> 0", atLeast(1), "kind=coordinator")
	n1.check("lockd_classic_elections_started_total", ">= 1 (every node starts one at boot)", atLeast(1))
	n1.check("lockd_classic_epoch", ">= 1", atLeast(1))
	for _, name := range []string{"lockd_classic_messages_lost_total", "lockd_classic_messages_suppressed_total",
		"lockd_classic_in_election", "lockd_classic_last_election_seconds"} {
		n1.check(name, "present", atLeast(0))
	}
	if k := len(n1.series("lockd_classic_messages_sent_total")); k != 4 {
		t.Errorf("n1: %d series of lockd_classic_messages_sent_total, want one per kind bully sends (4)", k)
	}
	n3.check("lockd_lock_grants_total", ">= 1", atLeast(1), "kind=immediate")

	// n2 takes over; n1 learns its address from its heartbeats.
	c.procs[2].kill9()
	waitFor(t, 15*time.Second, "n2 to coordinate", func() bool {
		var cl api.Cluster
		st, _ := doJSON(c.procs[1].http, "GET", "/v1/cluster", nil, &cl)
		return st == 200 && cl.State == "coordinator" && cl.MasterLeaseRemaining != nil
	})
	other := newSession(t, front, time.Minute)
	if _, st, e := acquire(front, "jobs", other); st != 200 {
		t.Fatalf("acquire through n1 after the takeover: %d %s %s", st, e.Code, e.Message)
	}
	scrapeMetrics(t, c.procs[1].http).check("lockd_lock_grants_total", "1 (the tenure starts empty)", equal(1), "kind=immediate")
}
