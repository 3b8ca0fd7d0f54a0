package system

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockd/lockd/httpapi/wire"
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
	var tok wire.Token
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
