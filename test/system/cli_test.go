package system

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockdCmd runs the lockd binary against the cluster's first node.
func lockdCmd(t *testing.T, c *procCluster, args ...string) *exec.Cmd {
	cmd := exec.Command(mustBuild(t), args...)
	cmd.Env = append(os.Environ(), "LOCKD_ADDR="+c.procs[0].http)
	return cmd
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestCLI_LockRunsNeverOverlap(t *testing.T) {
	c := mustStartCluster(t, 1)
	dir := t.TempDir()
	// Each run checks, by a marker file, that nobody else is inside, and
	// appends its token to a shared file.
	script := `if [ -e inuse ]; then echo overlap >> bad; fi; touch inuse; sleep 0.2; rm inuse; echo $LOCKD_TOKEN >> tokens`
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				cmd := lockdCmd(t, c, "lock", "--wait", "30s", "job", "--", "sh", "-c", script)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("worker %d run %d: %v\n%s", w, i, err, out)
				}
			}
		}()
	}
	wg.Wait()
	if b, err := os.ReadFile(filepath.Join(dir, "bad")); err == nil {
		t.Fatalf("two commands held the lock at once:\n%s", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	var prev uint64
	lines := strings.Fields(string(b))
	for _, l := range lines {
		tok, _ := strconv.ParseUint(l, 10, 64)
		if tok <= prev {
			t.Fatalf("tokens not increasing in run order: %v", lines)
		}
		prev = tok
	}
	if len(lines) != 8 {
		t.Fatalf("%d runs recorded a token, want 8", len(lines))
	}
}

func TestCLI_LockExitCodes(t *testing.T) {
	c := mustStartCluster(t, 1)
	if code := exitCodeOf(lockdCmd(t, c, "lock", "a", "--", "sh", "-c", "exit 7").Run()); code != 7 {
		t.Fatalf("child exit 7 became %d", code)
	}
	if code := exitCodeOf(lockdCmd(t, c, "lock", "a", "--", "sh", "-c", "kill -KILL $$").Run()); code != 128+9 {
		t.Fatalf("child killed by SIGKILL became %d, want 137", code)
	}
	// While one holds the lock, --wait 0 gives up at once with exit 3.
	holder := lockdCmd(t, c, "lock", "a", "--", "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); _ = holder.Wait() }()
	waitFor(t, 10*time.Second, "the holder to take the lock", func() bool {
		out, _ := lockdCmd(t, c, "locks").Output()
		return strings.Contains(string(out), "exclusive")
	})
	if code := exitCodeOf(lockdCmd(t, c, "lock", "--wait", "0", "a", "--", "true").Run()); code != 3 {
		t.Fatalf("try-lock of a held lock exited %d, want 3", code)
	}
	if code := exitCodeOf(lockdCmd(t, c, "lock", "--wait", "300ms", "a", "--", "true").Run()); code != 3 {
		t.Fatalf("wait that runs out exited %d, want 3", code)
	}
	if code := exitCodeOf(lockdCmd(t, c, "lock", "bad//name", "--", "true").Run()); code != 2 {
		t.Fatalf("bad name exited %d, want 2", code)
	}
}

func TestCLI_LosingTheLockStopsTheChild(t *testing.T) {
	c := mustStartCluster(t, 1)
	dir := t.TempDir()
	script := `trap 'echo term > got-term; exit 0' TERM; echo $LOCKD_SESSION > session; while :; do sleep 0.05; done`
	cmd := lockdCmd(t, c, "lock", "--ttl", "2s", "--grace", "2s", "lost", "--", "sh", "-c", script)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var sid string
	waitFor(t, 10*time.Second, "the child to start", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "session"))
		sid = strings.TrimSpace(string(b))
		return err == nil && sid != ""
	})
	// The session ends under the holder (an operator destroys it): the
	// next keepalive learns it, the lock is lost, the child is stopped.
	mustDo(t, c.procs[0].http, "DELETE", "/v1/sessions/"+sid, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if code := exitCodeOf(err); code != 4 {
			t.Fatalf("lockd exited %d after losing the lock, want 4", code)
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatal("lockd did not stop after losing the lock")
	}
	if _, err := os.Stat(filepath.Join(dir, "got-term")); err != nil {
		t.Fatalf("the child did not get SIGTERM: %v", err)
	}
}

func TestCLI_ElectRunsCommandWhileLeader(t *testing.T) {
	c := mustStartCluster(t, 1)
	out, err := lockdCmd(t, c, "elect", "boss", "--value", "me", "--", "sh", "-c", `echo "$LOCKD_ELECTION $LOCKD_VALUE $LOCKD_TOKEN"`).Output()
	if err != nil {
		t.Fatalf("elect: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 || f[0] != "boss" || f[1] != "me" || f[2] == "0" {
		t.Fatalf("command saw %q", out)
	}
	// Resigned on exit: nobody leads.
	if code := exitCodeOf(lockdCmd(t, c, "leader", "boss").Run()); code != 3 {
		t.Fatalf("leader after the command ended exited %d, want 3 (nobody leads)", code)
	}
	if out, err := lockdCmd(t, c, "elections", "--json").Output(); err != nil || strings.TrimSpace(string(out)) != "[]" {
		t.Fatalf("elections after the resign: %q %v, want []", out, err)
	}
	// The list shows a running leader with its value.
	leader := lockdCmd(t, c, "elect", "boss", "--value", "me", "--", "sleep", "30")
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { leader.Process.Kill(); _ = leader.Wait() }()
	waitFor(t, 10*time.Second, "the election in the list", func() bool {
		out, _ := lockdCmd(t, c, "elections").Output()
		return strings.Contains(string(out), "boss") && strings.Contains(string(out), "me")
	})
}
