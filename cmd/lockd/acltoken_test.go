package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockd/lockd/api"
)

// lockd serve takes its own ACL token from --acl-token-file or
// LOCKD_AGENT_ACL_TOKEN, else the bootstrap token; LOCKD_ACL_TOKEN, the
// CLI user's token, is read only with ACLs on and none of those given,
// with a deprecation warning, is ignored (with a warning) by a node with a
// bootstrap token, and is never read with ACLs off.
func TestServeFlags_AgentTokenIsNotTheCLIToken(t *testing.T) {
	const agent, cli, file = "agent-secret-0123456789", "cli-user-secret-0123456789", "file-secret-0123456789"
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(file+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const boot = "bootstrap-secret-0123456789"
	bootFile := filepath.Join(t.TempDir(), "boot")
	if err := os.WriteFile(bootFile, []byte(boot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     string
		warnings int
	}{
		{"agent variable wins", []string{"--acl"}, map[string]string{agentTokenEnv: agent, cliTokenEnv: cli}, agent, 0},
		{"file wins", []string{"--acl", "--acl-token-file", path}, map[string]string{agentTokenEnv: agent, cliTokenEnv: cli}, file, 0},
		{"CLI variable alone: deprecated", []string{"--acl"}, map[string]string{agentTokenEnv: "", cliTokenEnv: cli}, cli, 1},
		{"ACLs off: CLI variable not read", nil, map[string]string{agentTokenEnv: "", cliTokenEnv: "not even a valid secret"}, "", 0},
		{"nothing: the bootstrap token", []string{"--acl"}, map[string]string{agentTokenEnv: "", cliTokenEnv: ""}, "", 0},
		{"bootstrap token: CLI variable ignored", []string{"--acl", "--acl-bootstrap-token-file", bootFile},
			map[string]string{agentTokenEnv: "", cliTokenEnv: cli}, "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseServe(t, append(tt.args, "--data", t.TempDir()), tt.env)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			cfg, err := f.config(slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ACLToken != tt.want {
				t.Errorf("node token %q, want %q", cfg.ACLToken, tt.want)
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != tt.warnings {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.warnings, logs.String())
			}
			if strings.Contains(logs.String(), cli) {
				t.Errorf("a secret was logged:\n%s", logs.String())
			}
		})
	}
}

// A 401 is told in the CLI's terms: without a token, name LOCKD_ACL_TOKEN
// and --acl-token, not the HTTP header; with one, say it was refused.
func TestExplain_Unauthorized(t *testing.T) {
	noToken := fmt.Errorf("create session: %w", api.Errorf(api.CodeUnauthorized, "ACLs are on: send a token as \"Authorization: Bearer SECRET\""))
	got := explain(noToken, false).Error()
	if !strings.Contains(got, "LOCKD_ACL_TOKEN") || !strings.Contains(got, "--acl-token") || strings.Contains(got, "Authorization") {
		t.Errorf("no token: %q", got)
	}
	got = explain(api.Errorf(api.CodeUnauthorized, "unknown or revoked token"), true).Error()
	if !strings.Contains(got, "LOCKD_ACL_TOKEN") || !strings.Contains(got, "unknown or revoked token") {
		t.Errorf("refused token: %q", got)
	}
	other := errors.New("connection refused")
	if explain(other, false) != other { //nolint:errorlint // the very error must come back, not one wrapping it
		t.Error("explain changed an error that is not a 401")
	}
}
