package system

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/test/proccluster"
)

// A cluster with ACLs on, run by the binary as an operator would: the
// bootstrap token from a file, a token made with `lockd acl token create`,
// and `lockd lock` working with it, refused without it or outside its
// rules, and refused once it is revoked.
// exitError is lockd's exit code for a failed command.
const exitError = 1

func TestCLI_ACLTokensAndLock(t *testing.T) {
	const boot = "system-test-bootstrap-secret"
	file := filepath.Join(t.TempDir(), "boot")
	if err := os.WriteFile(file, []byte(boot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustStartClusterAs(t, boot, 3, "--acl", "--acl-bootstrap-token-file", file)
	as := func(token string, args ...string) ([]byte, int) {
		cmd := lockdCmd(t, c, args...)
		cmd.Env = append(cmd.Env, "LOCKD_ACL_TOKEN="+token)
		out, err := cmd.Output()
		return out, exitCodeOf(err)
	}
	out, code := as(boot, "acl", "token", "create", "--json", "--description", "jobs", "--rule", "lock:jobs/:write")
	var tok api.Token
	if code != 0 || json.Unmarshal(out, &tok) != nil || tok.Secret == "" {
		t.Fatalf("acl token create: exit %d, %s", code, out)
	}
	if out, code := as(tok.Secret, "lock", "jobs/nightly", "--", "sh", "-c", `test -n "$LOCKD_TOKEN"`); code != 0 {
		t.Fatalf("lock with the token: exit %d, %s", code, out)
	}
	if _, code := as("", "lock", "jobs/nightly", "--", "true"); code != exitError {
		t.Fatalf("lock without a token: exit %d, want %d", code, exitError)
	}
	if _, code := as(tok.Secret, "lock", "other/x", "--", "true"); code != exitError {
		t.Fatalf("lock outside the token's rules: exit %d, want %d", code, exitError)
	}
	if out, code := as(tok.Secret, "acl", "token", "list"); code != exitError {
		t.Fatalf("a non-admin token listed tokens: exit %d, %s", code, out)
	}
	out, code = as(boot, "acl", "token", "list")
	if code != 0 || !strings.Contains(string(out), tok.AccessorID) || strings.Contains(string(out), tok.Secret) {
		t.Fatalf("acl token list: exit %d, %s (want the accessor, never the secret)", code, out)
	}
	if out, code := as(boot, "acl", "token", "revoke", tok.AccessorID); code != 0 {
		t.Fatalf("revoke: exit %d, %s", code, out)
	}
	if _, code := as(tok.Secret, "lock", "jobs/nightly", "--", "true"); code != exitError {
		t.Fatalf("lock with a revoked token: exit %d, want %d", code, exitError)
	}
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.logPath)
		if strings.Contains(string(b), boot) || strings.Contains(string(b), tok.Secret) {
			t.Fatalf("%s logged a secret", p.id)
		}
	}
}

// TestCLI_LockOnASecuredCluster: on a 3-node cluster with TLS for clients
// (client certificates required), mutual TLS between nodes and ACLs at
// once, `lockd lock` works with the CA, the client certificate and a
// non-admin token from the environment (LOCKD_CACERT, LOCKD_CERT,
// LOCKD_KEY, LOCKD_ACL_TOKEN; LOCKD_ADDR lists every node as host:port),
// and fails without the token or without the client certificate.
func TestCLI_LockOnASecuredCluster(t *testing.T) {
	c, _ := startSecuredCluster(t, proccluster.Config{Nodes: 3, TLS: true, ACL: true, Plain: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok, err := c.CreateToken(ctx, api.CreateTokenRequest{Description: "cli",
		Rules: []acl.Rule{{Kind: acl.Lock, Prefix: "jobs/", Access: acl.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, strings.TrimPrefix(n.HTTP, "https://")) // host:port means https:// with LOCKD_CACERT
	}
	lock := func(token, cert string) ([]byte, int) {
		cmd := exec.Command(mustBuild(t), "lock", "--wait", "10s", "jobs/nightly", "--", "sh", "-c", `test -n "$LOCKD_TOKEN"`)
		cmd.Env = append(os.Environ(), "LOCKD_ADDR="+strings.Join(addrs, ","), "LOCKD_CACERT="+c.TLSFile(certs.CAFile),
			"LOCKD_CERT="+cert, "LOCKD_KEY="+c.TLSFile(certs.ClientKeyFile), "LOCKD_ACL_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		return out, exitCodeOf(err)
	}
	clientCert := c.TLSFile(certs.ClientFile)
	if out, code := lock(tok.Secret, clientCert); code != 0 {
		t.Fatalf("lockd lock with TLS and a token: exit %d\n%s", code, out)
	}
	if out, code := lock("", clientCert); code != exitError || !strings.Contains(string(out), "ACLs on") ||
		!strings.Contains(string(out), "LOCKD_ACL_TOKEN") {
		t.Fatalf("lockd lock without a token: exit %d, want %d (ACLs on, set LOCKD_ACL_TOKEN)\n%s", code, exitError, out)
	}
	if out, code := lock(tok.Secret, ""); code != exitError {
		t.Fatalf("lockd lock without a client certificate: exit %d, want %d\n%s", code, exitError, out)
	}
	// What docs/operations.md's Prometheus scrape configuration relies on: /metrics
	// answers a client with the CA, a client certificate and a token, and
	// refuses one without the token.
	tlsCfg, err := certs.ClientTLS(c.TLSFile(certs.CAFile), clientCert, c.TLSFile(certs.ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer hc.CloseIdleConnections()
	for _, n := range c.Nodes {
		for _, token := range []string{tok.Secret, ""} {
			req, _ := http.NewRequest("GET", n.HTTP+"/metrics", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET %s/metrics: %v", n.HTTP, err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			switch {
			case token != "" && (resp.StatusCode != 200 || !strings.Contains(string(body), "lockd_raft_term")):
				t.Fatalf("GET %s/metrics with a token: %d", n.HTTP, resp.StatusCode)
			case token == "" && resp.StatusCode != http.StatusUnauthorized:
				t.Fatalf("GET %s/metrics without a token: %d, want 401", n.HTTP, resp.StatusCode)
			}
		}
	}
}
