package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// call is one Service method call the fake saw, with its arguments (the
// context left out).
type call struct {
	Method string
	Args   []any
}

// fakeService is a programmable Service that records every call. Its
// answers are computed from the arguments so that tests can see what
// reached it; err, when set, is returned by every method instead.
type fakeService struct {
	mu         sync.Mutex
	calls      []call
	isLeader   bool
	leaderHTTP string            // Leader's LeaderAddr.HTTP
	leaderPeer string            // and its Peer, with leaderID as its ID
	leaderID   string            //
	members    map[string]string // MemberHTTP's answers, by id
	memberHTTP int               // how many times MemberHTTP was called
	err        error
	removal    error // what Removal returns
	// onCall, when set, runs inside every call with the request's context;
	// a non-nil result is returned as the call's error.
	onCall func(ctx context.Context) error
}

// newLeaderFake returns a fake that is the leader and answers successfully.
func newLeaderFake() *fakeService { return &fakeService{isLeader: true} }

var fakeTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func (f *fakeService) record(ctx context.Context, method string, args ...any) error {
	f.mu.Lock()
	f.calls = append(f.calls, call{Method: method, Args: args})
	err, hook := f.err, f.onCall
	f.mu.Unlock()
	if hook != nil {
		if herr := hook(ctx); herr != nil {
			return herr
		}
	}
	return err
}

// Calls returns a copy of the calls recorded so far.
func (f *fakeService) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeService) Leader() (bool, LeaderAddr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.isLeader, LeaderAddr{ID: f.leaderID, Peer: f.leaderPeer, HTTP: f.leaderHTTP}
}

func (f *fakeService) MemberHTTP(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memberHTTP++
	return f.members[id]
}

func (f *fakeService) CreateSession(ctx context.Context, req api.CreateSessionRequest) (api.Session, error) {
	s := api.Session{ID: "s1", Name: req.Name, TTL: req.TTL}
	if req.LockDelay != nil {
		s.LockDelay = *req.LockDelay
	}
	return s, f.record(ctx, "CreateSession", req)
}

func (f *fakeService) KeepAlive(ctx context.Context, id string) (api.KeepAliveResponse, error) {
	return api.KeepAliveResponse{ID: id, TTL: api.Duration(15 * time.Second)}, f.record(ctx, "KeepAlive", id)
}

func (f *fakeService) KeepAliveMany(ctx context.Context, ids []string) (api.KeepAliveManyResponse, error) {
	out := api.KeepAliveManyResponse{Expired: []string{}}
	for _, id := range ids {
		out.Renewed = append(out.Renewed, api.KeepAliveResponse{ID: id, TTL: api.Duration(15 * time.Second)})
	}
	return out, f.record(ctx, "KeepAliveMany", ids)
}

func (f *fakeService) DestroySession(ctx context.Context, id string) error {
	return f.record(ctx, "DestroySession", id)
}

func fakeSession(id string) api.Session {
	return api.Session{ID: id, TTL: api.Duration(15 * time.Second), LockDelay: api.Duration(5 * time.Second), Locks: []string{"a"}}
}

func (f *fakeService) Session(ctx context.Context, id string, opt ReadOptions) (api.Session, error) {
	return fakeSession(id), f.record(ctx, "Session", id, opt)
}

// The lists answer one item and name a next page when the request asks
// for one item only, so that tests can see the cursor pass through.
func (f *fakeService) Sessions(ctx context.Context, opt ListOptions) (api.SessionList, error) {
	l := api.SessionList{Sessions: []api.Session{fakeSession("s1")}, Index: 7}
	if opt.Limit == 1 {
		l.Next = "s1"
	}
	return l, f.record(ctx, "Sessions", opt)
}

func (f *fakeService) Acquire(ctx context.Context, name string, req api.AcquireRequest) (api.AcquireResponse, error) {
	return api.AcquireResponse{Name: name, Mode: req.Mode, Token: 42, Session: req.Session}, f.record(ctx, "Acquire", name, req)
}

func (f *fakeService) Release(ctx context.Context, name string, req api.SessionRequest) error {
	return f.record(ctx, "Release", name, req)
}

func fakeLock(name string) api.Lock {
	return api.Lock{
		Name: name, Mode: api.ModeExclusive,
		Holders:     []api.Holder{{Session: "s1", Token: 42, AcquiredAt: fakeTime}},
		Waiters:     []api.Waiter{},
		ModifyIndex: 42,
	}
}

func (f *fakeService) Lock(ctx context.Context, name string, opt ReadOptions) (api.Lock, error) {
	return fakeLock(name), f.record(ctx, "Lock", name, opt)
}

func (f *fakeService) Locks(ctx context.Context, opt ListOptions) (api.LockList, error) {
	l := api.LockList{Locks: []api.Lock{fakeLock("a")}, Index: 42}
	if opt.Limit == 1 {
		l.Next = "a"
	}
	return l, f.record(ctx, "Locks", opt)
}

func (f *fakeService) Elections(ctx context.Context, opt ListOptions) (api.ElectionList, error) {
	l := api.ElectionList{Elections: []api.Election{{Name: "e", Session: "s1", Value: "v", Token: 43, ModifyIndex: 43}}, Index: 43}
	if opt.Limit == 1 {
		l.Next = "e"
	}
	return l, f.record(ctx, "Elections", opt)
}

func (f *fakeService) Check(ctx context.Context, name string, token uint64) (bool, error) {
	return token == 42, f.record(ctx, "Check", name, token)
}

func (f *fakeService) Campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Election, error) {
	return api.Election{Name: name, Session: req.Session, Value: req.Value, Token: 43, ModifyIndex: 43}, f.record(ctx, "Campaign", name, req)
}

func (f *fakeService) Proclaim(ctx context.Context, name string, req api.ProclaimRequest) error {
	return f.record(ctx, "Proclaim", name, req)
}

func (f *fakeService) Resign(ctx context.Context, name string, req api.SessionRequest) error {
	return f.record(ctx, "Resign", name, req)
}

func (f *fakeService) Election(ctx context.Context, name string, opt ReadOptions) (api.Election, error) {
	return api.Election{Name: name, Session: "s1", Value: "v", Token: 43, ModifyIndex: 43}, f.record(ctx, "Election", name, opt)
}

func (f *fakeService) Cluster(ctx context.Context) (api.Cluster, error) {
	c := api.Cluster{
		Mode: "raft", NodeID: "n1", State: "leader",
		Leader: &api.LeaderInfo{ID: "n1", HTTP: "http://127.0.0.1:7400"},
		Term:   2, CommitIndex: 10, AppliedIndex: 10,
		Members: []api.Member{{ID: "n1", Peer: "127.0.0.1:7401", HTTP: "http://127.0.0.1:7400", Voter: true, Leader: true}},
	}
	return c, f.record(ctx, "Cluster")
}

func (f *fakeService) AddMember(ctx context.Context, m api.Member) error {
	return f.record(ctx, "AddMember", m)
}

func (f *fakeService) RemoveMember(ctx context.Context, id string) error {
	return f.record(ctx, "RemoveMember", id)
}

func (f *fakeService) TransferLeadership(ctx context.Context, to string) (api.TransferResponse, error) {
	if to == "" {
		to = "n2"
	}
	return api.TransferResponse{From: "n1", Leader: api.LeaderInfo{ID: to, HTTP: "http://127.0.0.1:7410"}},
		f.record(ctx, "TransferLeadership", to)
}

func (f *fakeService) Removal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removal
}

func (f *fakeService) Ready(ctx context.Context) error {
	return f.record(ctx, "Ready")
}

// fakeFaults is a FaultInjector that records its calls.
type fakeFaults struct {
	mu    sync.Mutex
	rules map[string]string
	calls []call
}

func (f *fakeFaults) SetFault(peer, direction, rule string, delay time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{"SetFault", []any{peer, direction, rule, delay}})
	if rule != "drop" && rule != "blackhole" && rule != "delay" {
		return api.Errorf(api.CodeBadRequest, "unknown rule %q", rule)
	}
	if f.rules == nil {
		f.rules = map[string]string{}
	}
	f.rules[peer] = direction + " " + rule
	return nil
}

func (f *fakeFaults) Heal(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{"Heal", []any{peer}})
	if peer == "" {
		f.rules = nil
	}
	delete(f.rules, peer)
}

func (f *fakeFaults) Faults() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.rules {
		out[k] = v
	}
	return out
}

func (f *fakeFaults) Refused() any { return map[string]int{"n9": 3} }

// testConfig returns a Config over svc whose log goes to the test's output,
// shown for failing tests and under -v.
func testConfig(t *testing.T, svc Service) Config {
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return Config{Service: svc, Logger: logger, NodeID: "test"}
}

// mustNewServer returns a Server over svc and, if not nil, faults.
func mustNewServer(t *testing.T, svc Service, faults FaultInjector) *Server {
	t.Helper()
	cfg := testConfig(t, svc)
	cfg.Faults = faults
	return New(cfg)
}

// serve sends one request to h and returns the recorded response.
func serve(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// mustErrorBody decodes an error response and checks its shape: exactly
// the "error" and "code" fields, JSON content type.
func mustErrorBody(t *testing.T, rec *httptest.ResponseRecorder) api.Error {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var fields map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &fields); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body.String(), err)
	}
	if len(fields) != 2 || fields["error"] == nil || fields["code"] == nil {
		t.Fatalf("error body %s: want exactly {\"error\",\"code\"}", rec.Body.String())
	}
	var e api.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body: %v", err)
	}
	return e
}

// assertJSONEqual fails unless got and want hold the same JSON value.
func assertJSONEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body = %s\nwant   %s", strings.TrimSpace(got), want)
	}
}
