package system

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
)

// cliSessions lists the sessions through the CLI's JSON output; nil when
// the command fails.
func cliSessions(t *testing.T, c *procCluster) []wire.Session {
	t.Helper()
	out, err := lockdCmd(t, c, "sessions", "--json").Output()
	var ss []wire.Session
	if err != nil || json.Unmarshal(out, &ss) != nil {
		return nil
	}
	return ss
}

// startCLI starts a lockd command that keeps running, and kills it when
// the test ends.
func startCLI(t *testing.T, c *procCluster, args ...string) *exec.Cmd {
	t.Helper()
	cmd := lockdCmd(t, c, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// `lockd lock` and `lockd elect` name their sessions HOST:PID:COMMAND, or
// as --session-name says, and the tables of locks, elections and
// sessions show who holds what by that name.
func TestCLI_SessionsAreNamedAfterHostPidAndCommand(t *testing.T) {
	c := mustStartCluster(t, 1)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	holder := startCLI(t, c, "lock", "job", "--", "sleep", "30")
	startCLI(t, c, "elect", "boss", "--session-name", "the-scheduler", "--", "sleep", "30")
	waitFor(t, 15*time.Second, "both sessions to hold what they asked for", func() bool {
		n := 0
		for _, s := range cliSessions(t, c) {
			n += len(s.Locks) + len(s.Elections)
		}
		return n == 2
	})
	want := fmt.Sprintf("%s:%d:sleep", host, holder.Process.Pid)
	byName := map[string]wire.Session{}
	for _, s := range cliSessions(t, c) {
		byName[s.Name] = s
	}
	if s, ok := byName[want]; !ok || len(s.Locks) != 1 || s.Locks[0] != "job" {
		t.Fatalf("no session named %q holding job: %+v", want, byName)
	}
	if s, ok := byName["the-scheduler"]; !ok || len(s.Elections) != 1 || s.Elections[0] != "boss" {
		t.Fatalf("no session named the-scheduler leading boss: %+v", byName)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"locks"}, []string{"job", "(" + want + ")"}},
		{[]string{"elections"}, []string{"boss", "the-scheduler"}},
		{[]string{"leader", "boss"}, []string{"the-scheduler"}},
		{[]string{"sessions"}, []string{want, "the-scheduler"}},
	} {
		out, err := lockdCmd(t, c, tc.args...).Output()
		if err != nil {
			t.Fatalf("lockd %v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("lockd %v does not show %q:\n%s", tc.args, w, out)
			}
		}
	}
}
