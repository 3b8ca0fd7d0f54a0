package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
)

// keepaliveServer is a lockd stand-in on 127.0.0.1 that creates sessions
// s1, s2, ... with a fixed TTL and records every keepalive request: the ids
// of each many-sessions request, and each one-session request's id.
type keepaliveServer struct {
	ttl     time.Duration
	noBatch bool // answer the many-sessions request 404, as a server without it would

	mu      sync.Mutex
	n       int
	expired map[string]bool
	many    [][]string
	single  []string
	refused int // many-sessions requests answered 404
}

func newKeepaliveServer(t *testing.T, ttl time.Duration, noBatch bool) (*keepaliveServer, *client.Client) {
	s := &keepaliveServer{ttl: ttl, noBatch: noBatch, expired: map[string]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	return s, mustClient(t, ts.URL)
}

func (s *keepaliveServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, code string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(api.Error{Code: code, Message: code})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
		s.n++
		_ = json.NewEncoder(w).Encode(api.Session{ID: fmt.Sprintf("s%d", s.n), TTL: api.Duration(s.ttl)})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/keepalive":
		if s.noBatch {
			s.refused++
			fail(http.StatusNotFound, api.CodeNotFound)
			return
		}
		var req api.KeepAliveManyRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(http.StatusBadRequest, api.CodeBadRequest)
			return
		}
		s.many = append(s.many, req.IDs)
		out := api.KeepAliveManyResponse{Renewed: []api.KeepAliveResponse{}, Expired: []string{}}
		for _, id := range req.IDs {
			if s.expired[id] {
				out.Expired = append(out.Expired, id)
			} else {
				out.Renewed = append(out.Renewed, api.KeepAliveResponse{ID: id, TTL: api.Duration(s.ttl)})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/keepalive"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/keepalive")
		s.single = append(s.single, id)
		if s.expired[id] {
			fail(http.StatusGone, api.CodeSessionExpired)
			return
		}
		_ = json.NewEncoder(w).Encode(api.KeepAliveResponse{ID: id, TTL: api.Duration(s.ttl)})
	case r.Method == http.MethodDelete:
		_ = json.NewEncoder(w).Encode(struct{}{})
	default:
		fail(http.StatusNotFound, api.CodeNotFound)
	}
}

func (s *keepaliveServer) requests() (many [][]string, single []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.many), slices.Clone(s.single)
}

func (s *keepaliveServer) expire(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expired[id] = true
}

// Sessions of one client created together are renewed together: every
// round is one request that carries all of them, and none is renewed by a
// request of its own. Each renewal moves its session's deadline.
func TestSessions_OneClientRenewsItsSessionsInOneRequest(t *testing.T) {
	const n = 10
	srv, c := newKeepaliveServer(t, 3*time.Second, false)
	var sessions []*client.Session
	var first []time.Time
	for range n {
		s := mustSession(t, c)
		sessions = append(sessions, s)
		first = append(first, s.Deadline())
	}
	waitFor(t, 10*time.Second, "two rounds of keepalives", func() bool {
		many, _ := srv.requests()
		return len(many) >= 2
	})
	many, single := srv.requests()
	if len(single) != 0 {
		t.Fatalf("sessions renewed one by one: %v (and together: %v)", single, many)
	}
	for _, ids := range many {
		if len(ids) != n {
			t.Fatalf("a round renewed %v, not all %d sessions; rounds %v", ids, n, many)
		}
	}
	for i, s := range sessions {
		if !s.Alive() || !s.Deadline().After(first[i]) {
			t.Fatalf("session %s: alive %v, deadline %v, at creation %v", s.ID(), s.Alive(), s.Deadline(), first[i])
		}
	}
}

// A session the many-sessions answer lists as expired ends with
// ErrSessionExpired and is not renewed again; the others go on.
func TestSessions_ExpiredInASharedRenewalEndsOnlyThatSession(t *testing.T) {
	srv, c := newKeepaliveServer(t, 3*time.Second, false)
	a, b, d := mustSession(t, c), mustSession(t, c), mustSession(t, c)
	srv.expire(b.ID())
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the expired session did not end")
	}
	if !errors.Is(b.Err(), client.ErrSessionExpired) {
		t.Fatalf("expired session ended with %v", b.Err())
	}
	rounds := func() int { many, _ := srv.requests(); return len(many) }
	after := rounds()
	waitFor(t, 10*time.Second, "a round after the expiry", func() bool { return rounds() > after })
	many, _ := srv.requests()
	for _, ids := range many[after:] {
		if slices.Contains(ids, b.ID()) {
			t.Fatalf("the expired session was renewed again: %v", many)
		}
		if !slices.Contains(ids, a.ID()) || !slices.Contains(ids, d.ID()) {
			t.Fatalf("a round left out a live session: %v", many)
		}
	}
	if !a.Alive() || !d.Alive() {
		t.Fatalf("live sessions ended: %v %v", a.Err(), d.Err())
	}
}

// Against a server without the many-sessions request (404), the client
// renews each session by its own request and keeps them all alive; it asks
// the refused request once.
func TestSessions_RenewOneByOneWhereTheServerHasNoBatch(t *testing.T) {
	srv, c := newKeepaliveServer(t, 3*time.Second, true)
	a, b := mustSession(t, c), mustSession(t, c)
	da, db := a.Deadline(), b.Deadline()
	waitFor(t, 10*time.Second, "two rounds of one-by-one renewals", func() bool {
		_, single := srv.requests()
		return len(single) >= 4 && slices.Contains(single, a.ID()) && slices.Contains(single, b.ID())
	})
	waitFor(t, 10*time.Second, "both deadlines moved", func() bool {
		return a.Deadline().After(da) && b.Deadline().After(db)
	})
	if !a.Alive() || !b.Alive() {
		t.Fatalf("sessions ended: %v %v", a.Err(), b.Err())
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.refused != 1 {
		t.Fatalf("the refused request was asked %d times", srv.refused)
	}
}

// A closed session is no longer renewed; the client's other sessions are.
func TestSessions_ClosedSessionLeavesTheSharedRenewal(t *testing.T) {
	srv, c := newKeepaliveServer(t, 3*time.Second, false)
	a, b, d := mustSession(t, c), mustSession(t, c), mustSession(t, c)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a round", func() bool { many, _ := srv.requests(); return len(many) > 0 })
	many, single := srv.requests()
	if slices.Contains(single, b.ID()) || slices.ContainsFunc(many, func(ids []string) bool { return slices.Contains(ids, b.ID()) }) {
		t.Fatalf("closed session renewed: many %v single %v", many, single)
	}
	if !a.Alive() || !d.Alive() {
		t.Fatalf("live sessions ended: %v %v", a.Err(), d.Err())
	}
}
