package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

const bootSecret = "acl-test-bootstrap-secret" //nolint:gosec // G101: a fixture for a throwaway test cluster

// aclClient sends JSON requests with a given Authorization header.
type aclClient struct {
	t    *testing.T
	base string
}

type answer struct {
	status int
	code   string
	body   []byte
}

func (c aclClient) do(auth, method, path string, in any) answer {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.Error
	_ = json.Unmarshal(b, &e)
	return answer{status: resp.StatusCode, code: e.Code, body: b}
}

// must sends a request that must succeed with status and decodes the body.
func (c aclClient) must(auth, method, path string, in any, status int, out any) {
	c.t.Helper()
	a := c.do(auth, method, path, in)
	if a.status != status {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.body, status)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			c.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func bearer(secret string) string { return "Bearer " + secret }

func aclCluster(t *testing.T, n int) (*servertest.Cluster, int) {
	c := servertest.NewWith(t, n, func(_ int, cfg *server.Config) {
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = bootSecret
	})
	leader := c.WaitLeader()
	servertest.WaitFor(t, 10e9, "the bootstrap token", func() bool {
		_, ok := c.Nodes[leader].Node().ResolveToken(bootSecret)
		return ok
	})
	return c, leader
}

// principal is one kind of caller of the ACL matrix.
type principal struct {
	name string
	auth string
	// session is the session its requests name, lock the lock.
	session string
	// class decides the expected answer.
	class string // "nobody", "read", "other", "notOwner", "write", "admin"
}

// TestACL_EveryEndpoint runs every principal against every endpoint and
// checks the exact status and code, and that a refused request changed
// nothing (the leader's applied index stays where it was).
func TestACL_EveryEndpoint(t *testing.T) {
	c, leader := aclCluster(t, 3)
	ac := aclClient{t: t, base: c.URL(leader)}
	adminAuth := bearer(bootSecret)

	newToken := func(rules ...string) api.Token {
		req := api.CreateTokenRequest{Description: strings.Join(rules, " ")}
		for _, r := range rules {
			rule, err := acl.ParseRule(r)
			if err != nil {
				t.Fatal(err)
			}
			req.Rules = append(req.Rules, rule)
		}
		var tok api.Token
		ac.must(adminAuth, "POST", "/v1/acl/tokens", req, http.StatusCreated, &tok)
		if tok.Secret == "" || tok.AccessorID == "" {
			t.Fatalf("created token without secret or accessor: %+v", tok)
		}
		return tok
	}
	read := newToken("lock:acl/:read", "election:acl/:read")
	other := newToken("lock:other/:write", "election:other/:write")
	write := newToken("lock:acl/:write", "election:acl/:write")
	write2 := newToken("lock:acl/:write", "election:acl/:write")
	revoked := newToken("lock:acl/:write")
	ac.must(adminAuth, "DELETE", "/v1/acl/tokens/"+revoked.AccessorID, nil, http.StatusOK, nil)

	var sW, sA api.Session
	ac.must(bearer(write.Secret), "POST", "/v1/sessions", api.CreateSessionRequest{}, http.StatusCreated, &sW)
	ac.must(adminAuth, "POST", "/v1/sessions", api.CreateSessionRequest{}, http.StatusCreated, &sA)

	principals := []principal{
		{"no token", "", sW.ID, "nobody"},
		{"malformed header", "Basic " + write.Secret, sW.ID, "nobody"},
		{"unknown token", bearer("not-a-token-of-this-cluster"), sW.ID, "nobody"},
		{"revoked token", bearer(revoked.Secret), sW.ID, "nobody"},
		{"read token", bearer(read.Secret), sW.ID, "read"},
		{"write token on another prefix", bearer(other.Secret), sW.ID, "other"},
		{"write token on the prefix, another's session", bearer(write2.Secret), sW.ID, "notOwner"},
		{"write token on the prefix", bearer(write.Secret), sW.ID, "write"},
		{"admin", adminAuth, sA.ID, "admin"},
	}
	var cl api.Cluster
	ac.must(adminAuth, "GET", "/v1/cluster", nil, http.StatusOK, &cl)
	var self api.Member
	for _, m := range cl.Members {
		if m.ID == cl.NodeID {
			self = m
		}
	}

	// An endpoint: the request a principal makes, and the status of
	// success; allowed lists the classes it is served to (nil: every
	// valid token; public: everyone, even without one).
	type endpoint struct {
		method, path string
		body         func(p principal) any
		ok           int
		allowed      []string
		public       bool
	}
	lock := func(p principal) string { return "acl/" + p.class }
	sess := func(p principal) any { return api.SessionRequest{Session: p.session} }
	anyValid := []string{"read", "other", "notOwner", "write", "admin"}
	writers := []string{"write", "admin"}
	readers := []string{"read", "notOwner", "write", "admin"}
	owners := []string{"write", "admin"}
	admins := []string{"admin"}
	eps := []endpoint{
		{"GET", "/healthz", nil, 200, nil, true},
		{"GET", "/readyz", nil, 200, nil, true},
		{"POST", "/v1/sessions", func(principal) any { return api.CreateSessionRequest{} }, 201, []string{"other", "notOwner", "write", "admin"}, false},
		{"GET", "/v1/sessions", nil, 200, anyValid, false},
		{"GET", "/v1/sessions/{s}", nil, 200, owners, false},
		{"POST", "/v1/sessions/{s}/keepalive", nil, 200, owners, false},
		{"POST", "/v1/sessions/keepalive", func(p principal) any { return api.KeepAliveManyRequest{IDs: []string{p.session}} }, 200, owners, false},
		{"POST", "/v1/locks/{l}/acquire", sess, 200, writers, false},
		{"GET", "/v1/locks/{l}", nil, 200, readers, false},
		{"GET", "/v1/locks", nil, 200, anyValid, false},
		{"POST", "/v1/locks/{l}/check", func(principal) any { return api.CheckRequest{Token: 1} }, 200, readers, false},
		{"POST", "/v1/locks/{l}/release", sess, 200, writers, false},
		{"POST", "/v1/elections/{l}/campaign", func(p principal) any { return api.CampaignRequest{Session: p.session, Value: "v"} }, 200, writers, false},
		{"POST", "/v1/elections/{l}/proclaim", func(p principal) any { return api.ProclaimRequest{Session: p.session, Value: "w"} }, 200, writers, false},
		{"GET", "/v1/elections/{l}", nil, 200, readers, false},
		{"GET", "/v1/elections", nil, 200, anyValid, false},
		{"POST", "/v1/elections/{l}/resign", sess, 200, writers, false},
		{"GET", "/v1/cluster", nil, 200, anyValid, false},
		{"POST", "/v1/cluster/members", func(principal) any { return self }, 200, admins, false},
		{"DELETE", "/v1/cluster/members/n9", nil, 404, admins, false},
		{"GET", "/v1/acl/tokens/self", nil, 200, anyValid, false},
		{"GET", "/v1/acl/tokens", nil, 200, admins, false},
		{"POST", "/v1/acl/tokens", func(principal) any { return api.CreateTokenRequest{Admin: true} }, 201, admins, false},
		{"DELETE", "/v1/acl/tokens/0123", nil, 404, admins, false},
		{"GET", "/v1/debug/faults", nil, 200, admins, false},
		{"GET", "/v1/debug/clock", nil, 200, admins, false},
		{"GET", "/v1/snapshot", nil, 200, admins, false},
		{"DELETE", "/v1/sessions/{s}", nil, 200, owners, false},
	}
	applied := func() uint64 { return c.Nodes[leader].Node().FSM().AppliedIndex() }
	for _, ep := range eps {
		for _, p := range principals {
			path := strings.NewReplacer("{s}", p.session, "{l}", lock(p)).Replace(ep.path)
			var body any
			if ep.body != nil {
				body = ep.body(p)
			}
			wantStatus, wantCode := ep.ok, ""
			switch {
			case ep.public:
			case p.class == "nobody":
				wantStatus, wantCode = 401, api.CodeUnauthorized
			case !contains(ep.allowed, p.class):
				wantStatus, wantCode = 403, api.CodeForbidden
			case ep.ok == 404:
				wantCode = api.CodeNotFound
			}
			before := applied()
			a := ac.do(p.auth, ep.method, path, body)
			name := fmt.Sprintf("%s %s as %s", ep.method, path, p.name)
			if a.status != wantStatus || a.code != wantCode {
				t.Errorf("%s: %d %q (%s), want %d %q", name, a.status, a.code, bytes.TrimSpace(a.body), wantStatus, wantCode)
			}
			if a.status == 401 || a.status == 403 {
				if after := applied(); after != before {
					t.Errorf("%s: refused, but the applied index moved from %d to %d", name, before, after)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A token sees the full ids of its own sessions only, and only the locks
// its rules let it read; a revoked token stops working at the next
// request; a follower forwards what it does not serve and answers stale
// reads by its own state.
func TestACL_ViewsRevocationAndFollowers(t *testing.T) {
	c, leader := aclCluster(t, 3)
	ac := aclClient{t: t, base: c.URL(leader)}
	adminAuth := bearer(bootSecret)
	mk := func(rules ...string) api.Token {
		req := api.CreateTokenRequest{}
		for _, r := range rules {
			rule, _ := acl.ParseRule(r)
			req.Rules = append(req.Rules, rule)
		}
		var tok api.Token
		ac.must(adminAuth, "POST", "/v1/acl/tokens", req, http.StatusCreated, &tok)
		return tok
	}
	a, b := mk("lock:a/:write"), mk("lock:b/:write", "lock:a/:read")
	var sa, sb api.Session
	ac.must(bearer(a.Secret), "POST", "/v1/sessions", api.CreateSessionRequest{}, 201, &sa)
	ac.must(bearer(b.Secret), "POST", "/v1/sessions", api.CreateSessionRequest{}, 201, &sb)
	ac.must(bearer(a.Secret), "POST", "/v1/locks/a/x/acquire", api.AcquireRequest{Session: sa.ID}, 200, nil)
	ac.must(bearer(b.Secret), "POST", "/v1/locks/b/y/acquire", api.AcquireRequest{Session: sb.ID}, 200, nil)

	var list api.SessionList
	ac.must(bearer(b.Secret), "GET", "/v1/sessions", nil, 200, &list)
	seen := map[string]bool{}
	for _, s := range list.Sessions {
		seen[s.ID] = true
	}
	if !seen[sb.ID] || seen[sa.ID] {
		t.Errorf("b's session list %+v: want b's own id in full and a's shortened", list.Sessions)
	}
	var l api.Lock
	ac.must(bearer(b.Secret), "GET", "/v1/locks/a/x", nil, 200, &l)
	if len(l.Holders) != 1 || l.Holders[0].Session == sa.ID || !strings.HasPrefix(sa.ID, strings.TrimSuffix(l.Holders[0].Session, "…")) {
		t.Errorf("a/x read by b: holders %+v, want a's session shortened", l.Holders)
	}
	ac.must(bearer(a.Secret), "GET", "/v1/locks/a/x", nil, 200, &l)
	if l.Holders[0].Session != sa.ID {
		t.Errorf("a/x read by a: holder %q, want its own id %q", l.Holders[0].Session, sa.ID)
	}
	var locks api.LockList
	ac.must(bearer(a.Secret), "GET", "/v1/locks", nil, 200, &locks)
	if len(locks.Locks) != 1 || locks.Locks[0].Name != "a/x" {
		t.Errorf("a's lock list %+v: want a/x only (b/y is outside its rules)", locks.Locks)
	}

	// Revocation: the next request is refused.
	ac.must(bearer(b.Secret), "POST", "/v1/sessions/"+sb.ID+"/keepalive", nil, 200, nil)
	ac.must(adminAuth, "DELETE", "/v1/acl/tokens/"+b.AccessorID, nil, 200, nil)
	if got := ac.do(bearer(b.Secret), "POST", "/v1/sessions/"+sb.ID+"/keepalive", nil); got.status != 401 {
		t.Errorf("keepalive with a revoked token: %d %s, want 401", got.status, got.body)
	}

	// Through a follower: forwarded requests are judged by the leader, so
	// a token made a moment ago works, and no token is 401.
	fol := aclClient{t: t, base: c.URL(c.Follower(leader))}
	fresh := mk("lock:f/:write")
	var sf api.Session
	fol.must(bearer(fresh.Secret), "POST", "/v1/sessions", api.CreateSessionRequest{}, 201, &sf)
	if got := fol.do("", "POST", "/v1/locks/f/z/acquire", api.AcquireRequest{Session: sf.ID}); got.status != 401 {
		t.Errorf("forwarded acquire without a token: %d, want 401", got.status)
	}
	if got := fol.do(bearer(a.Secret), "POST", "/v1/locks/f/z/acquire", api.AcquireRequest{Session: sf.ID}); got.status != 403 {
		t.Errorf("forwarded acquire outside a's rules: %d, want 403", got.status)
	}
	servertest.WaitFor(t, 10e9, "the follower to apply the revocation", func() bool {
		return fol.do(bearer(b.Secret), "GET", "/v1/locks?stale", nil).status == 401
	})
	if got := fol.do(bearer(a.Secret), "GET", "/v1/locks/b/y?stale", nil); got.status != 403 {
		t.Errorf("stale read outside a's rules on a follower: %d, want 403", got.status)
	}
}
