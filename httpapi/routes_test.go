package httpapi

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

func dur(d time.Duration) api.Duration { return api.Duration(d) }

func durPtr(d time.Duration) *api.Duration { v := api.Duration(d); return &v }

func list(r ReadOptions, limit int, after string) ListOptions {
	return ListOptions{ReadOptions: r, Limit: limit, After: after}
}

// TestRoutes_Success checks every route's status, body and the call that
// reached the Service, including the defaults filled in before it.
func TestRoutes_Success(t *testing.T) {
	const lockJSON = `{"name":"a/b","mode":"exclusive","holders":[{"session":"s1","token":42,"acquired_at":"2025-01-02T03:04:05Z"}],"waiters":[],"modify_index":42}`
	const sessionJSON = `{"id":"s1","ttl":"15s","lock_delay":"5s","locks":["a"]}`
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string
		wantCall                 call
	}{
		{"create session, empty body", "POST", "/v1/sessions", "", 201,
			`{"id":"s1","ttl":"15s","lock_delay":"5s"}`,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(api.DefaultTTL), LockDelay: durPtr(api.DefaultLockDelay)}}}},
		{"create session, empty object", "POST", "/v1/sessions", `{}`, 201,
			`{"id":"s1","ttl":"15s","lock_delay":"5s"}`,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(api.DefaultTTL), LockDelay: durPtr(api.DefaultLockDelay)}}}},
		{"create session, all fields", "POST", "/v1/sessions", `{"ttl":"30s","lock_delay":"0s","name":"worker"}`, 201,
			`{"id":"s1","name":"worker","ttl":"30s","lock_delay":"0s"}`,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(30 * time.Second), LockDelay: durPtr(0), Name: "worker"}}}},
		{"keepalive", "POST", "/v1/sessions/s1/keepalive", "", 200,
			`{"id":"s1","ttl":"15s"}`, call{"KeepAlive", []any{"s1"}}},
		{"keepalive of several sessions", "POST", "/v1/sessions/keepalive", `{"ids":["s1","s2"]}`, 200,
			`{"renewed":[{"id":"s1","ttl":"15s"},{"id":"s2","ttl":"15s"}],"expired":[]}`, call{"KeepAliveMany", []any{[]string{"s1", "s2"}}}},
		{"destroy session", "DELETE", "/v1/sessions/s1", "", 200, `{}`, call{"DestroySession", []any{"s1"}}},
		{"get session", "GET", "/v1/sessions/s1", "", 200, sessionJSON, call{"Session", []any{"s1", ReadOptions{}}}},
		{"list sessions", "GET", "/v1/sessions?consistent", "", 200,
			`{"sessions":[` + sessionJSON + `],"index":7}`, call{"Sessions", []any{list(ReadOptions{Consistent: true}, api.DefaultListLimit, "")}}},
		{"list sessions, one page", "GET", "/v1/sessions?limit=1&after=s0", "", 200,
			`{"sessions":[` + sessionJSON + `],"index":7,"next":"s1"}`, call{"Sessions", []any{list(ReadOptions{}, 1, "s0")}}},
		{"list sessions, largest page, blocking", "GET", "/v1/sessions?limit=10000&index=6&wait=1s", "", 200,
			`{"sessions":[` + sessionJSON + `],"index":7}`, call{"Sessions", []any{list(ReadOptions{Index: 6, Wait: time.Second}, api.MaxListLimit, "")}}},
		{"acquire, default mode", "POST", "/v1/locks/a/b/acquire", `{"session":"s1"}`, 200,
			`{"name":"a/b","mode":"exclusive","token":42,"session":"s1"}`,
			call{"Acquire", []any{"a/b", api.AcquireRequest{Session: "s1", Mode: api.ModeExclusive}}}},
		{"acquire, shared, blocking", "POST", "/v1/locks/a/b/acquire", `{"session":"s1","mode":"shared","wait":"5m"}`, 200,
			`{"name":"a/b","mode":"shared","token":42,"session":"s1"}`,
			call{"Acquire", []any{"a/b", api.AcquireRequest{Session: "s1", Mode: api.ModeShared, Wait: dur(5 * time.Minute)}}}},
		{"release", "POST", "/v1/locks/a/b/release", `{"session":"s1","seq":7}`, 200, `{}`, call{"Release", []any{"a/b", api.SessionRequest{Session: "s1", Seq: 7}}}},
		{"get lock", "GET", "/v1/locks/a/b", "", 200, lockJSON, call{"Lock", []any{"a/b", ReadOptions{}}}},
		{"get lock, blocking", "GET", "/v1/locks/a/b?index=41&wait=30s", "", 200, lockJSON,
			call{"Lock", []any{"a/b", ReadOptions{Index: 41, Wait: 30 * time.Second}}}},
		{"get lock, wait without index", "GET", "/v1/locks/a/b?wait=1s&consistent=true", "", 200, lockJSON,
			call{"Lock", []any{"a/b", ReadOptions{Wait: time.Second, Consistent: true}}}},
		{"get lock named like an action by an older version", "GET", "/v1/locks/a%2Facquire", "", 200,
			`{"name":"a/acquire","mode":"exclusive","holders":[{"session":"s1","token":42,"acquired_at":"2025-01-02T03:04:05Z"}],"waiters":[],"modify_index":42}`,
			call{"Lock", []any{"a/acquire", ReadOptions{}}}},
		{"list locks", "GET", "/v1/locks?stale=false", "", 200,
			`{"locks":[{"name":"a","mode":"exclusive","holders":[{"session":"s1","token":42,"acquired_at":"2025-01-02T03:04:05Z"}],"waiters":[],"modify_index":42}],"index":42}`,
			call{"Locks", []any{list(ReadOptions{}, api.DefaultListLimit, "")}}},
		{"list locks, one page", "GET", "/v1/locks?after=a/b&limit=1", "", 200,
			`{"locks":[{"name":"a","mode":"exclusive","holders":[{"session":"s1","token":42,"acquired_at":"2025-01-02T03:04:05Z"}],"waiters":[],"modify_index":42}],"index":42,"next":"a"}`,
			call{"Locks", []any{list(ReadOptions{}, 1, "a/b")}}},
		{"check, valid", "POST", "/v1/locks/a/b/check", `{"token":42}`, 200, `{"valid":true}`, call{"Check", []any{"a/b", uint64(42)}}},
		{"check, invalid", "POST", "/v1/locks/a/b/check", `{"token":7}`, 200, `{"valid":false}`, call{"Check", []any{"a/b", uint64(7)}}},
		{"campaign", "POST", "/v1/elections/svc/db/campaign", `{"session":"s1","value":"10.0.0.1:5432","wait":"1m"}`, 200,
			`{"name":"svc/db","session":"s1","value":"10.0.0.1:5432","token":43,"modify_index":43}`,
			call{"Campaign", []any{"svc/db", api.CampaignRequest{Session: "s1", Value: "10.0.0.1:5432", Wait: dur(time.Minute)}}}},
		{"proclaim", "POST", "/v1/elections/svc/db/proclaim", `{"session":"s1","value":"x"}`, 200, `{}`,
			call{"Proclaim", []any{"svc/db", api.ProclaimRequest{Session: "s1", Value: "x"}}}},
		{"resign", "POST", "/v1/elections/svc/db/resign", `{"session":"s1"}`, 200, `{}`, call{"Resign", []any{"svc/db", api.SessionRequest{Session: "s1"}}}},
		{"get election", "GET", "/v1/elections/svc/db?index=3", "", 200,
			`{"name":"svc/db","session":"s1","value":"v","token":43,"modify_index":43}`,
			call{"Election", []any{"svc/db", ReadOptions{Index: 3}}}},
		{"list elections", "GET", "/v1/elections?stale", "", 200,
			`{"elections":[{"name":"e","session":"s1","value":"v","token":43,"modify_index":43}],"index":43}`,
			call{"Elections", []any{list(ReadOptions{Stale: true}, api.DefaultListLimit, "")}}},
		{"list elections, one page", "GET", "/v1/elections?limit=1", "", 200,
			`{"elections":[{"name":"e","session":"s1","value":"v","token":43,"modify_index":43}],"index":43,"next":"e"}`,
			call{"Elections", []any{list(ReadOptions{}, 1, "")}}},
		{"cluster", "GET", "/v1/cluster", "", 200,
			`{"mode":"raft","node_id":"n1","state":"leader","leader":{"id":"n1","http":"http://127.0.0.1:7400"},"term":2,"commit_index":10,"applied_index":10,"master_lease_failures":0,"members":[{"id":"n1","peer":"127.0.0.1:7401","http":"http://127.0.0.1:7400","voter":true,"leader":true}]}`,
			call{"Cluster", nil}},
		{"add member, host:port", "POST", "/v1/cluster/members", `{"id":"n2","peer":"127.0.0.2:7401","http":"127.0.0.2:7400"}`, 200, `{}`,
			call{"AddMember", []any{api.Member{ID: "n2", Peer: "127.0.0.2:7401", HTTP: "http://127.0.0.2:7400", Voter: true}}}},
		{"add member, URL", "POST", "/v1/cluster/members", `{"id":"n2","peer":"[::1]:7401","http":"https://node2:7400/","voter":true}`, 200, `{}`,
			call{"AddMember", []any{api.Member{ID: "n2", Peer: "[::1]:7401", HTTP: "https://node2:7400", Voter: true}}}},
		{"add non-voter", "POST", "/v1/cluster/members", `{"id":"n4","peer":"127.0.0.4:7401","http":"127.0.0.4:7400","voter":false}`, 200, `{}`,
			call{"AddMember", []any{api.Member{ID: "n4", Peer: "127.0.0.4:7401", HTTP: "http://127.0.0.4:7400"}}}},
		{"remove member", "DELETE", "/v1/cluster/members/n2", "", 200, `{}`, call{"RemoveMember", []any{"n2"}}},
		{"readyz", "GET", "/readyz", "", 200, `{"status":"ready"}`, call{"Ready", nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			assertJSONEqual(t, rec.Body.String(), tt.wantBody)
			calls := svc.Calls()
			if len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.wantCall) {
				t.Errorf("calls = %#v\nwant [%#v]", calls, tt.wantCall)
			}
		})
	}
}

// TestHealthz_AlwaysOK checks that /healthz answers without asking the
// Service, even on a node that is not ready.
func TestHealthz_AlwaysOK(t *testing.T) {
	svc := &fakeService{err: api.Errorf(api.CodeNoLeader, "no leader")}
	rec := serve(mustNewServer(t, svc, nil), "GET", "/healthz", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	assertJSONEqual(t, rec.Body.String(), `{"status":"ok"}`)
	if calls := svc.Calls(); len(calls) != 0 {
		t.Errorf("calls = %v, want none", calls)
	}
}

// TestReadyz_NotReady checks that /readyz answers 503 for any error, with
// the error's body.
func TestReadyz_NotReady(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantCode  string
		wantRetry string
	}{
		{"no leader", api.Errorf(api.CodeNoLeader, "no leader yet"), api.CodeNoLeader, "1"},
		{"catching up", api.Errorf(api.CodeTimeout, "applied index behind"), api.CodeTimeout, ""},
		{"plain error", errPlain, api.CodeInternal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &fakeService{err: tt.err}
			rec := serve(mustNewServer(t, svc, nil), "GET", "/readyz", "")
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("status = %d, want 503", rec.Code)
			}
			if e := mustErrorBody(t, rec); e.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Code, tt.wantCode)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
			}
		})
	}
}
