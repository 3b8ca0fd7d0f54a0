package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
)

// slowSessionServer is a lockd stand-in on 127.0.0.1 that answers session
// creation and the first keepalive each late by delay, and records when
// each request arrived. Later keepalives are held unanswered until the test
// ends, so that the session's deadline comes from the first one.
type slowSessionServer struct {
	delay time.Duration
	ttl   time.Duration

	mu          sync.Mutex
	created     time.Time // when the create request arrived
	keepalive   time.Time // when the first keepalive arrived
	kaAnswered  bool
	keepalives  int
	releaseHeld chan struct{}
}

func newSlowSessionServer(t *testing.T, ttl, delay time.Duration) (*slowSessionServer, string) {
	s := &slowSessionServer{delay: delay, ttl: ttl, releaseHeld: make(chan struct{})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			s.mu.Lock()
			s.created = arrived
			s.mu.Unlock()
			time.Sleep(s.delay)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(api.Session{ID: "s1", TTL: api.Duration(s.ttl)})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/s1/keepalive":
			s.mu.Lock()
			s.keepalives++
			first := s.keepalives == 1
			if first {
				s.keepalive = arrived
			}
			s.mu.Unlock()
			if !first {
				select {
				case <-s.releaseHeld:
				case <-r.Context().Done():
				}
				http.Error(w, "held", http.StatusServiceUnavailable)
				return
			}
			time.Sleep(s.delay)
			s.mu.Lock()
			s.kaAnswered = true
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(api.KeepAliveResponse{ID: "s1", TTL: api.Duration(s.ttl)})
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/sessions/s1":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(s.releaseHeld) }) // runs first: frees held keepalives
	return s, ts.URL
}

// TestSession_DeadlineRunsFromTheSendTime checks the local deadline's
// formula on values, not on timing: after creation and after a keepalive
// whose answers the server sends late, Deadline() - (TTL x (1 - drift) -
// margin) must be a moment at or before the request reached the server
// (so the deadline counts from when the request was sent, not from when
// its answer came back) and after the previous answer (so it is that
// request's). A deadline from the answer's receipt, or without the drift
// factor or the margin, puts that moment after the server saw the request.
func TestSession_DeadlineRunsFromTheSendTime(t *testing.T) {
	const (
		ttl    = 1200 * time.Millisecond
		drift  = 0.25
		margin = 100 * time.Millisecond
		span   = 800 * time.Millisecond // ttl x (1 - drift) - margin, exact
		delay  = 150 * time.Millisecond // how late the server answers
	)
	srv, url := newSlowSessionServer(t, ttl, delay)
	c := mustClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now()
	s, err := client.NewSession(ctx, c, client.WithTTL(ttl), client.WithDrift(drift), client.WithMargin(margin))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	returned := time.Now()
	srv.mu.Lock()
	created := srv.created
	srv.mu.Unlock()

	first := s.Deadline()
	if from := first.Add(-span); from.Before(before) || from.After(created) {
		t.Fatalf("after creation, Deadline - %v is %v after NewSession was called; want it between the call (0s) and the request's arrival at the server (%v): the deadline must be the send time + TTL x (1 - drift) - margin, it is %v after the answer came back",
			span, from.Sub(before), created.Sub(before), first.Sub(returned))
	}

	var renewed time.Time
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		srv.mu.Lock()
		answered := srv.kaAnswered
		srv.mu.Unlock()
		if d := s.Deadline(); answered && d.After(first) {
			renewed = d
			break
		}
		if time.Now().After(end) {
			t.Fatal("the first keepalive was not answered and taken within 5s")
		}
	}
	srv.mu.Lock()
	kaArrived := srv.keepalive
	srv.mu.Unlock()
	if from := renewed.Add(-span); !from.After(created) || from.After(kaArrived) {
		t.Fatalf("after a keepalive, Deadline - %v is %v after the create request reached the server; want it after that (the keepalive was sent after the create was answered) and no later than the keepalive's arrival at the server (%v)",
			span, from.Sub(created), kaArrived.Sub(created))
	}
}
