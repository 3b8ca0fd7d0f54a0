package proccluster

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
)

// TestPlainClusterHasNoSecurityFlags: without TLS and ACL a cluster's
// nodes start as before, and it has no admin token or certificates.
func TestPlainClusterHasNoSecurityFlags(t *testing.T) {
	c, err := New(Config{Binary: "lockd", Nodes: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminToken() != "" || c.ClientTLS() != nil || c.TLSFile("ca.pem") != "" {
		t.Fatalf("plain cluster has credentials: token %q, TLS %v", c.AdminToken(), c.ClientTLS())
	}
	for _, n := range c.Nodes {
		for _, a := range n.args {
			if strings.HasPrefix(a, "--acl") || strings.HasPrefix(a, "--tls") || strings.HasPrefix(a, "--peer-") {
				t.Fatalf("%s starts with %s: %v", n.ID, a, n.args)
			}
		}
		if !strings.HasPrefix(n.HTTP, "http://") || n.token != "" {
			t.Fatalf("%s: %s, token %q", n.ID, n.HTTP, n.token)
		}
	}
}

// TestSecuredClusterSpeaksTLSAndTokens: with TLS and ACL, every node serves
// HTTPS with ACLs on, the cluster's own calls (status, fault rules) carry
// the admin token, a request without a token is refused, and a token made
// with CreateToken does what its rules say and no more.
func TestSecuredClusterSpeaksTLSAndTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockd and starts three processes")
	}
	dir := t.TempDir()
	bin, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Binary: bin, Nodes: 3, Dir: dir, TLS: true, ACL: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.AdminToken()) < acl.MinSecret {
		t.Fatalf("admin token %q", c.AdminToken())
	}
	if fi, err := os.Stat(c.tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("bootstrap token file: %v %v", fi, err)
	}
	for _, n := range c.Nodes {
		for _, flag := range []string{"--acl", "--acl-bootstrap-token-file", "--tls-cert", "--client-ca", "--peer-ca"} {
			if !slices.Contains(n.args, flag) {
				t.Fatalf("%s starts without %s: %v", n.ID, flag, n.args)
			}
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.WaitLeader(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := c.Nodes[0]
	if other == leader {
		other = c.Nodes[1]
	}

	// The debug routes need the admin token, which Do sends.
	if err := leader.SetFault(ctx, other.ID, "both", "drop"); err != nil {
		t.Fatalf("fault rule with the admin token: %v", err)
	}
	if err := leader.HealFaults(ctx); err != nil {
		t.Fatal(err)
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c.ClientTLS()
	hc := &http.Client{Timeout: 3 * time.Second, Transport: tr}
	defer hc.CloseIdleConnections()
	status := func(method, url, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Logf("%s %s: %v", method, url, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, n := range c.Nodes {
		if got := status("GET", n.HTTP+"/v1/cluster", ""); got != http.StatusUnauthorized {
			t.Errorf("%s: GET /v1/cluster without a token: %d, want 401", n.ID, got)
		}
		if got := status("GET", "http://"+strings.TrimPrefix(n.HTTP, "https://")+"/v1/cluster", c.AdminToken()); got/100 == 2 {
			t.Errorf("%s served plain HTTP: %d", n.ID, got)
		}
	}

	tok, err := c.CreateToken(ctx, api.CreateTokenRequest{Description: "test", Rules: []acl.Rule{{Kind: acl.Lock, Access: acl.Write}}})
	if err != nil || tok.Secret == "" {
		t.Fatalf("create token: %+v %v", tok, err)
	}
	if got := status("GET", leader.HTTP+"/v1/debug/faults", tok.Secret); got != http.StatusForbidden {
		t.Errorf("a token with rules on the debug route: %d, want 403", got)
	}
	if got := status("POST", leader.HTTP+"/v1/sessions", tok.Secret); got/100 != 2 {
		t.Errorf("a token with a write rule creating a session: %d, want 2xx", got)
	}
	if _, err := c.CreateToken(ctx, api.CreateTokenRequest{Description: "no rules"}); api.CodeOf(err) != api.CodeBadRequest {
		t.Errorf("a token without rules: %v, want bad_request at once", err)
	}
}

// TestNonVoterArgs: with Voters and NonVoters, the initial voters start
// with --initial-cluster naming only them, the non-voters join through n1
// with --non-voter, every node gets --voters and --dead-voter-after, and
// StartJoin's arguments carry neither the initial cluster nor an old join.
func TestNonVoterArgs(t *testing.T) {
	c, err := New(Config{Binary: "lockd", Nodes: 6, Voters: 3, NonVoters: 2, KeepVoters: 3, DeadVoterAfter: 3 * time.Second, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	arg := func(n *Node, name string) (string, bool) {
		i := slices.Index(n.args, name)
		if i < 0 {
			return "", false
		}
		if i+1 < len(n.args) {
			return n.args[i+1], true
		}
		return "", true
	}
	for i, n := range c.Nodes {
		ic, hasIC := arg(n, "--initial-cluster")
		join, hasJoin := arg(n, "--join")
		_, nonVoter := arg(n, "--non-voter")
		if v, _ := arg(n, "--voters"); v != "3" {
			t.Errorf("%s: --voters %q", n.ID, v)
		}
		if v, _ := arg(n, "--dead-voter-after"); v != "3s" {
			t.Errorf("%s: --dead-voter-after %q", n.ID, v)
		}
		switch {
		case i < 3 || i == 5: // voters and the spare
			if !hasIC || strings.Count(ic, "=") != 3 || hasJoin || nonVoter {
				t.Errorf("%s: %v", n.ID, n.args)
			}
		default:
			if hasIC || join != c.Nodes[0].HTTP || !nonVoter {
				t.Errorf("%s: %v", n.ID, n.args)
			}
		}
		ja := n.joinArgs()
		if slices.Contains(ja, "--initial-cluster") || slices.Contains(ja, "--join") || slices.Contains(ja, "--non-voter") {
			t.Errorf("%s: join arguments %v", n.ID, ja)
		}
	}
}
