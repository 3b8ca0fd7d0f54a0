package load_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/bench/load"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

func small(endpoints []string) load.Config {
	cfg := load.DefaultConfig()
	cfg.Endpoints = endpoints
	cfg.Duration = 300 * time.Millisecond
	cfg.Workers, cfg.Waiters, cfg.Sessions = []int{1, 4}, []int{3}, []int{40}
	cfg.Callers, cfg.TTL = 8, 3*time.Second
	return cfg
}

// allRows runs the locks, handoff and keepalive rows of cfg (small: four
// rows in all) and checks that each completed cycles without an error.
func allRows(t *testing.T, cfg load.Config) []load.Row {
	t.Helper()
	var rows []load.Row
	for _, run := range []func(context.Context, load.Config) ([]load.Row, error){load.Locks, load.Handoff, load.Keepalive} {
		got, err := run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, got...)
	}
	var b strings.Builder
	load.Print(&b, rows)
	t.Log("\n" + b.String())
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		if r.Ops == 0 || r.Errors != 0 || r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 {
			t.Errorf("%s %d: %d ops, %d errors (%s), latency %+v", r.Bench, r.N, r.Ops, r.Errors, r.FirstError, r.Latency)
		}
	}
	return rows
}

// Every row runs against a real cluster, spread over all its nodes, and
// leaves nothing behind: no errors, keepalives write no entry, and the
// sessions are gone afterwards.
func TestRows_AgainstACluster(t *testing.T) {
	c := servertest.New(t, 3)
	c.WaitLeader()
	rows := allRows(t, small(c.URLs()))
	ka := rows[3]
	if ka.LeaseFailures == nil {
		t.Error("keepalive row against lockd: no lease-failure count")
	}
	if ka.RaftEntries == nil || *ka.RaftEntries != 0 || ka.Lapsed != 0 || ka.WrongExpiries != 0 {
		t.Errorf("keepalive row: entries %v, lapsed %d, wrong %d", ka.RaftEntries, ka.Lapsed, ka.WrongExpiries)
	}
	noSessionsLeft(t, c)
}

// The keepalive row renewing 16 sessions a request (POST
// /v1/sessions/keepalive) against a real cluster: every session renewed,
// none lapsed or expired early, no entry written.
func TestKeepaliveBatch_AgainstACluster(t *testing.T) {
	c := servertest.New(t, 3)
	c.WaitLeader()
	cfg := small(c.URLs())
	cfg.KeepaliveBatches = []int{16}
	rows, err := load.Keepalive(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	printRows(t, rows)
	r := rows[0]
	if r.Bench != "keepalive-batch" || r.Batch != 16 || r.Ops == 0 || r.Errors != 0 {
		t.Fatalf("row %s batch %d: %d renewals, %d errors (%s)", r.Bench, r.Batch, r.Ops, r.Errors, r.FirstError)
	}
	if r.RaftEntries == nil || *r.RaftEntries != 0 || r.Lapsed != 0 || r.WrongExpiries != 0 {
		t.Errorf("keepalive-batch row: entries %v, lapsed %d, wrong %d", r.RaftEntries, r.Lapsed, r.WrongExpiries)
	}
	// 40 sessions, 8 callers: 5 a caller, all in each of its requests, so
	// the row counts 5 renewals a request.
	if r.Ops != 5*r.Requests {
		t.Errorf("keepalive-batch row: %d renewals in %d requests, want 5 a request", r.Ops, r.Requests)
	}
	noSessionsLeft(t, c)
}

// noSessionsLeft checks that the rows destroyed every session they
// created.
func noSessionsLeft(t *testing.T, c *servertest.Cluster) {
	t.Helper()
	var ss api.SessionList
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(c.URL(0) + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&ss); err != nil {
		t.Fatal(err)
	}
	if len(ss.Sessions) != 0 {
		t.Errorf("%d sessions left behind", len(ss.Sessions))
	}
}

// A server that expires a session a moment after renewing it is caught as
// a wrong expiry, not counted as a lapse; one that writes a log entry per
// keepalive is caught by the Raft entries column.
func TestKeepalive_CatchesWrongExpiriesAndWrites(t *testing.T) {
	var commit, renewals, made atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			commit.Add(1)
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(api.Session{ID: fmt.Sprint("s", made.Add(1))})
		case r.URL.Path == "/v1/sessions/keepalive":
			commit.Add(1) // a write per request
			var req api.KeepAliveManyRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			out := api.KeepAliveManyResponse{Expired: []string{}}
			for _, id := range req.IDs {
				if renewals.Add(1)%7 == 0 {
					out.Expired = append(out.Expired, id)
				} else {
					out.Renewed = append(out.Renewed, api.KeepAliveResponse{ID: id})
				}
			}
			_ = json.NewEncoder(w).Encode(out)
		case strings.HasSuffix(r.URL.Path, "/keepalive"):
			commit.Add(1) // a write per keepalive
			if renewals.Add(1)%7 == 0 {
				w.WriteHeader(http.StatusGone)
				_ = json.NewEncoder(w).Encode(api.Error{Message: "expired", Code: api.CodeSessionExpired})
				return
			}
			_ = json.NewEncoder(w).Encode(api.KeepAliveResponse{})
		case r.URL.Path == "/v1/cluster":
			_ = json.NewEncoder(w).Encode(api.Cluster{State: "Leader", CommitIndex: commit.Load()})
		default:
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	for _, batch := range []int{1, 8} {
		cfg := small([]string{srv.URL})
		cfg.KeepaliveBatches = []int{batch}
		rows, err := load.Keepalive(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rows[0]
		if r.WrongExpiries == 0 || r.Lapsed != 0 || r.RaftEntries == nil || *r.RaftEntries == 0 {
			t.Fatalf("batch %d: wrong expiries %d, lapsed %d, entries %v: want wrong expiries and entries caught", batch, r.WrongExpiries, r.Lapsed, r.RaftEntries)
		}
	}
}

func printRows(t *testing.T, rows []load.Row) {
	t.Helper()
	var b strings.Builder
	load.Print(&b, rows)
	t.Log("\n" + b.String())
}

// The waiters and watchers rows against a real cluster whose nodes serve
// at most 40 blocking queries: 50 waiters are all queued, hand the lock
// on and drain; 30 queries all wait, of 50 at least the 10 beyond the
// limit are refused and not counted as errors (more if the leader has not
// yet seen all of the previous row's queries go); the rows leave no
// session behind.
func TestScaleRows_AgainstACluster(t *testing.T) {
	c := servertest.New(t, 3, func(nc *lease.Config) { nc.MaxBlockingQueries = 40 })
	cfg := small(c.URLs())
	cfg.Duration = 500 * time.Millisecond
	cfg.Queue, cfg.Watchers, cfg.SetupTimeout = []int{50}, []int{30, 50}, 20*time.Second

	rows, err := load.Waiters(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := load.Watchers(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, got...)
	printRows(t, rows)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (waiters 50; watchers 0, 30, 50)", len(rows))
	}
	for i, want := range []struct {
		bench           string
		n               int
		parked, refused int64
	}{{"waiters", 50, 50, 0}, {"watchers", 0, 0, 0}, {"watchers", 30, 30, 0}, {"watchers", 50, 40, 10}} {
		r := rows[i]
		if r.N == 50 && r.Bench == "watchers" && r.Refused >= 10 && r.Parked+r.Refused == 50 {
			want.parked, want.refused = r.Parked, r.Refused
		}
		if r.Bench != want.bench || r.N != want.n || r.Parked != want.parked || r.Refused != want.refused {
			t.Errorf("row %d: %s %d, parked %d, refused %d; want %s %d, parked %d, refused %d",
				i, r.Bench, r.N, r.Parked, r.Refused, want.bench, want.n, want.parked, want.refused)
		}
		// A row reports the errors it met; on a starved machine the
		// leader's master lease can lapse for a moment (no_leader),
		// which the row counts and which is no fault of the row's
		// plumbing. Any other error is.
		if r.Errors != 0 && strings.Contains(r.FirstError, "no leader") {
			t.Logf("%s %d: %d errors while the cluster had no serving leader (%s)", r.Bench, r.N, r.Errors, r.FirstError)
		} else if r.Errors != 0 {
			t.Errorf("%s %d: %d errors (%s)", r.Bench, r.N, r.Errors, r.FirstError)
		}
		if r.Ops == 0 || r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 {
			t.Errorf("%s %d: %d ops, latency %+v", r.Bench, r.N, r.Ops, r.Latency)
		}
	}
	if rows[0].Drain <= 0 || rows[0].Setup <= 0 {
		t.Errorf("waiters: setup %vs, drain %vs", rows[0].Setup, rows[0].Drain)
	}
	noSessionsLeft(t, c)
}

// A server that answers every acquire at once and every blocking query
// without waiting is caught: the waiters row never sees its queue and
// says how deep it got (0), the watchers row counts the early answers as
// errors.
func TestScaleRows_CatchABrokenServer(t *testing.T) {
	var made atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(api.Session{ID: fmt.Sprint("s", made.Add(1))})
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/locks/"):
			_ = json.NewEncoder(w).Encode(api.Lock{Name: strings.TrimPrefix(r.URL.Path, "/v1/locks/")})
		default:
			_, _ = w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	cfg := small([]string{srv.URL})
	cfg.Queue, cfg.Watchers, cfg.SetupTimeout = []int{20}, []int{20}, time.Second

	rows, err := load.Waiters(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Parked != 0 {
		t.Errorf("waiters: %d parked, want 0 (the server never queues)", r.Parked)
	}
	rows, err = load.Watchers(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	printRows(t, rows)
	if r := rows[1]; r.Errors == 0 || !strings.Contains(r.FirstError, "before its wait") {
		t.Errorf("watchers: %d errors (%s), want the early answers caught", r.Errors, r.FirstError)
	}
}

// A System without queues or blocking queries says so, and the rows stop
// cleanly before they create anything.
func TestScaleRows_Unsupported(t *testing.T) {
	sys := &memSystem{holders: map[string]*memSession{}}
	cfg := small(nil)
	cfg.System = sys
	cfg.Queue, cfg.Watchers = []int{5}, []int{5}
	for _, run := range []func(context.Context, load.Config) ([]load.Row, error){load.Waiters, load.Watchers} {
		if _, err := run(context.Background(), cfg); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("error %v, want one wrapping errors.ErrUnsupported", err)
		}
	}
	if sys.next != 0 {
		t.Errorf("%d sessions created", sys.next)
	}
}

// A create answered no_leader (nothing was done) is sent again and the
// row goes on, with the failed try counted as an error; a create that
// keeps failing ends the row.
func TestRows_CreateAgainAfterNoLeader(t *testing.T) {
	var creates atomic.Uint64
	var always atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && r.URL.Path == "/v1/sessions" {
			if n := creates.Add(1); n%3 == 0 || always.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(api.Error{Message: "no leader", Code: api.CodeNoLeader})
				return
			}
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(api.Session{ID: fmt.Sprint("s", creates.Load())})
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	cfg := small([]string{srv.URL})
	cfg.Workers = []int{8}
	rows, err := load.Locks(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Ops == 0 || r.Errors == 0 || !strings.Contains(r.FirstError, "no leader") {
		t.Errorf("%d cycles, %d errors (%s): want cycles, and the failed creates counted", r.Ops, r.Errors, r.FirstError)
	}
	always.Store(true)
	if _, err := load.Locks(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("error %v, want the create's no_leader after its last try", err)
	}
}
