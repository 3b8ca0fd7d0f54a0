package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/load"
	"github.com/lockd/lockd/internal/servertest"
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
	if ka.RaftEntries == nil || *ka.RaftEntries != 0 || ka.Lapsed != 0 || ka.WrongExpiries != 0 {
		t.Errorf("keepalive row: entries %v, lapsed %d, wrong %d", ka.RaftEntries, ka.Lapsed, ka.WrongExpiries)
	}
	var ss wire.SessionList
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
			json.NewEncoder(w).Encode(wire.Session{ID: fmt.Sprint("s", made.Add(1))})
		case strings.HasSuffix(r.URL.Path, "/keepalive"):
			commit.Add(1) // a write per keepalive
			if renewals.Add(1)%7 == 0 {
				w.WriteHeader(http.StatusGone)
				json.NewEncoder(w).Encode(wire.Error{Message: "expired", Code: wire.CodeSessionExpired})
				return
			}
			json.NewEncoder(w).Encode(wire.KeepAliveResponse{})
		case r.URL.Path == "/v1/cluster":
			json.NewEncoder(w).Encode(wire.Cluster{State: "Leader", CommitIndex: commit.Load()})
		default:
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	cfg := small([]string{srv.URL})
	rows, err := load.Keepalive(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.WrongExpiries == 0 || r.Lapsed != 0 || r.RaftEntries == nil || *r.RaftEntries == 0 {
		t.Fatalf("wrong expiries %d, lapsed %d, entries %v: want wrong expiries and entries caught", r.WrongExpiries, r.Lapsed, r.RaftEntries)
	}
}
