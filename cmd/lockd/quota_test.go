package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// captureStdout runs f with os.Stdout sent to a file and returns what it
// wrote (aclCmd writes its answers to os.Stdout).
func captureStdout(t *testing.T, f func() int) (string, int) {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = file
	code := f()
	os.Stdout = stdout
	b, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	_ = file.Close()
	return string(b), code
}

// lockd acl token create takes --max-keys and --max-bytes (not for an
// admin token, nor below 0, nor for another verb); list and self show
// them with what the token owns; lockd kv put past a limit exits 1 with
// the server's sentence, and nothing is written.
func TestACLCmd_TokenLimits(t *testing.T) {
	const boot = "cli-test-bootstrap-secret"
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = boot
	})
	c.WaitLeader()
	servertest.WaitFor(t, 10*time.Second, "the bootstrap token", func() bool {
		_, ok := c.Nodes[0].Node().ResolveToken(boot)
		return ok
	})
	acl := func(token string, args ...string) (string, int) {
		args = append(args, "--addr", c.URL(0), "--acl-token", token)
		return captureStdout(t, func() int { return aclCmd(args) })
	}
	out, code := acl(boot, "token", "create", "--json", "--rule", "key:q/:write", "--max-keys", "1", "--max-bytes", "100")
	var tok api.Token
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &tok) != nil || tok.MaxKeys != 1 || tok.MaxBytes != 100 {
		t.Fatalf("create with limits: exit %d, %s", code, out)
	}
	for _, args := range [][]string{
		{"token", "create", "--admin", "--max-keys", "1"},
		{"token", "create", "--rule", "key:q/:write", "--max-bytes", "-1"},
		{"token", "list", "--max-keys", "1"},
	} {
		if _, code := acl(boot, args...); code != cli.ExitUsage {
			t.Errorf("lockd acl %v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}

	r := kvRunner{t, c.URL(0)}
	r.must("", "put", "--acl-token", tok.Secret, "q/a", "x")
	code, _, errOut := r.run(context.Background(), "", "put", "--acl-token", tok.Secret, "q/b", "y")
	if code != cli.ExitError || !strings.Contains(errOut, "lockd kv put: ") || !strings.Contains(errOut, "over its max_keys of 1") ||
		!strings.Contains(errOut, "nothing was applied") {
		t.Fatalf("put past max_keys: exit %d, %q", code, errOut)
	}
	r.exits(exitNotAcquired, "get", "--acl-token", tok.Secret, "q/b")

	for _, verb := range []string{"list", "self"} {
		token := boot
		if verb == "self" {
			token = tok.Secret
		}
		out, code := acl(token, "token", verb)
		if code != cli.ExitOK || !strings.Contains(out, "LIMITS") || !strings.Contains(out, "OWNS") ||
			!strings.Contains(out, "max_keys=1,max_bytes=100") || !strings.Contains(out, "keys=1,bytes=4") {
			t.Errorf("acl token %s: exit %d\n%s", verb, code, out)
		}
	}
}
