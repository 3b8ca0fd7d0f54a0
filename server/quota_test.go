package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// TestKV_TokenLimits runs a token with limits on keys against a 3-node
// cluster with ACLs, through a follower (so the leader judges the
// forwarded write): writes past max_keys and max_bytes, alone or in a
// transaction, are answered 429 quota_exceeded and apply nothing; a
// delete, the end of an ephemeral key's session and a transaction that
// gives back first make room; an oversized value is 413 too_large; the
// token shows its limits and what it owns; every replica counts the same;
// the Go client surfaces the code, and the leader counts the refusals.
func TestKV_TokenLimits(t *testing.T) {
	c := servertest.NewWith(t, 3, func(_ int, cfg *server.Config) {
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = bootSecret
		cfg.Metrics = prometheus.NewRegistry()
	})
	leader := c.WaitLeader()
	servertest.WaitFor(t, 10e9, "the bootstrap token", func() bool {
		_, ok := c.Nodes[leader].Node().ResolveToken(bootSecret)
		return ok
	})
	adminAuth := bearer(bootSecret)
	ac := aclClient{t: t, base: c.URL(leader)}
	fol := aclClient{t: t, base: c.URL(c.Follower(leader))}
	rule, _ := acl.ParseRule("key:q/:write")
	var q api.Token
	ac.must(adminAuth, "POST", "/v1/acl/tokens", api.CreateTokenRequest{Rules: []acl.Rule{rule}, MaxKeys: 2, MaxBytes: 40}, http.StatusCreated, &q)
	if q.MaxKeys != 2 || q.MaxBytes != 40 {
		t.Fatalf("created %+v", q)
	}
	auth := bearer(q.Secret)
	applied := func() uint64 { return c.Nodes[leader].Node().FSM().AppliedIndex() }
	put := func(key, value string) answer {
		return fol.do(auth, "PUT", "/v1/kv/"+key, api.KVPutRequest{Value: []byte(value)})
	}
	refused := func(what string, code string, status int, send func() answer) {
		t.Helper()
		before := applied()
		got := send()
		if got.status != status || got.code != code {
			t.Fatalf("%s: %d %s, want %d %s", what, got.status, got.body, status, code)
		}
		if after := applied(); after != before {
			t.Fatalf("%s: refused, but the applied index moved from %d to %d", what, before, after)
		}
	}
	self := func() api.Token {
		t.Helper()
		var tok api.Token
		ac.must(auth, "GET", "/v1/acl/tokens/self", nil, 200, &tok) // the leader's view: a follower's may lag
		return tok
	}

	if got := put("q/a", "0123456789"); got.status != 200 { // 13 bytes
		t.Fatalf("put q/a: %d %s", got.status, got.body)
	}
	if got := put("q/b", "x"); got.status != 200 { // 4 bytes
		t.Fatalf("put q/b: %d %s", got.status, got.body)
	}
	refused("a third key", api.CodeQuotaExceeded, 429, func() answer { return put("q/c", "") })
	refused("a value past max_bytes", api.CodeQuotaExceeded, 429, func() answer { return put("q/b", strings.Repeat("y", 30)) })
	refused("a transaction past max_keys", api.CodeQuotaExceeded, 429, func() answer {
		return fol.do(auth, "POST", "/v1/txn", api.TxnRequest{Success: []api.TxnOp{
			{Put: &api.TxnPut{Key: "q/a", Value: []byte("1")}}, {Put: &api.TxnPut{Key: "q/c"}}}})
	})
	refused("a value over the bound", api.CodeTooLarge, 413, func() answer { return put("q/d", strings.Repeat("z", api.MaxKVValueLen+1)) })
	refused("a transaction's value over the bound", api.CodeTooLarge, 413, func() answer {
		return fol.do(auth, "POST", "/v1/txn", api.TxnRequest{Success: []api.TxnOp{{Put: &api.TxnPut{Key: "q/d", Value: make([]byte, api.MaxKVValueLen+1)}}}})
	})
	if got := fol.do(auth, "GET", "/v1/kv/q/a", nil); !strings.Contains(string(got.body), `"value":"MDEyMzQ1Njc4OQ=="`) {
		t.Fatalf("q/a after the refusals: %s", got.body)
	}
	if tok := self(); tok.MaxKeys != 2 || tok.MaxBytes != 40 || tok.Usage == nil || *tok.Usage != (api.KeyUsage{Keys: 2, Bytes: 17}) {
		t.Fatalf("self: %+v %+v", tok, tok.Usage)
	}

	// A transaction that gives a key back before it puts another fits.
	fol.must(auth, "POST", "/v1/txn", api.TxnRequest{Success: []api.TxnOp{
		{Delete: &api.TxnRange{Key: "q/b"}}, {Put: &api.TxnPut{Key: "q/c", Value: []byte("c")}}}}, 200, nil)
	// A delete makes room; so does the end of an ephemeral key's session.
	fol.must(auth, "DELETE", "/v1/kv/q/c", nil, 200, nil)
	var s api.Session
	fol.must(auth, "POST", "/v1/sessions", api.CreateSessionRequest{}, 201, &s)
	fol.must(auth, "PUT", "/v1/kv/q/e", api.KVPutRequest{Session: s.ID, Ephemeral: true}, 200, nil)
	refused("a key past max_keys, with an ephemeral one", api.CodeQuotaExceeded, 429, func() answer { return put("q/f", "") })
	fol.must(auth, "DELETE", "/v1/sessions/"+s.ID, nil, 200, nil)
	if got := put("q/f", ""); got.status != 200 {
		t.Fatalf("put after the session ended: %d %s", got.status, got.body)
	}
	if u := self().Usage; u == nil || *u != (api.KeyUsage{Keys: 2, Bytes: 16}) {
		t.Fatalf("usage %+v", u)
	}

	// The admin token takes a key over: it moves, whole, off q's count.
	ac.must(adminAuth, "PUT", "/v1/kv/q/a", api.KVPutRequest{Value: []byte("admin")}, 200, nil)
	var list api.TokenList
	ac.must(adminAuth, "GET", "/v1/acl/tokens", nil, 200, &list)
	for _, tok := range list.Tokens {
		want := api.KeyUsage{Keys: 1, Bytes: 8} // the admin's q/a; q's q/f
		if tok.AccessorID == q.AccessorID {
			want = api.KeyUsage{Keys: 1, Bytes: 3}
		}
		if tok.Usage == nil || *tok.Usage != want {
			t.Errorf("token %s (admin %v) owns %+v, want %+v", tok.AccessorID, tok.Admin, tok.Usage, want)
		}
	}

	// The Go client: the code, matched by errors.Is, not retried; an
	// oversized value it refuses itself, with the code the server gives.
	cl, err := client.NewWithConfig(client.Config{Endpoints: []string{c.URL(c.Follower(leader))}, BearerToken: q.Secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cl.KV().Put(ctx, "q/g", []byte("g")); err != nil {
		t.Fatal(err)
	}
	_, err = cl.KV().Put(ctx, "q/h", nil)
	if !errors.Is(err, client.ErrQuotaExceeded) || api.CodeOf(err) != api.CodeQuotaExceeded {
		t.Fatalf("client put past the limit: %v", err)
	}
	if _, err := cl.KV().Put(ctx, "q/h", make([]byte, api.MaxKVValueLen+1)); !errors.Is(err, client.ErrTooLarge) {
		t.Fatalf("client put of an oversized value: %v", err)
	}

	// Every replica counts the same.
	want := c.Nodes[leader].Node().FSM().KeyUsage(q.AccessorID)
	servertest.WaitFor(t, 10e9, "every replica to apply the last write", func() bool {
		for _, n := range c.Nodes {
			if n.Node().FSM().AppliedIndex() < applied() {
				return false
			}
		}
		return true
	})
	for i, n := range c.Nodes {
		if got := n.Node().FSM().KeyUsage(q.AccessorID); got != want {
			t.Errorf("node %d counts %+v for q, the leader %+v", i, got, want)
		}
	}

	// The leader counted the refusals (summed over the nodes, in case
	// leadership moved during the test).
	var refusals int
	for i := range c.Nodes {
		got := aclClient{t: t, base: c.URL(i)}.do(adminAuth, "GET", "/metrics", nil)
		for _, l := range strings.Split(string(got.body), "\n") {
			var n int
			if _, err := fmt.Sscanf(l, "lockd_kv_quota_refusals_total %d", &n); err == nil {
				refusals += n
			}
		}
	}
	if refusals != 5 {
		t.Errorf("%d refusals counted, want 5", refusals)
	}
}
