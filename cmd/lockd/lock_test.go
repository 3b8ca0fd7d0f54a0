package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/test/servertest"
)

// --wait of lockd lock: forever by default, spelt forever or -1; a
// duration; 0 tries once; anything else is a usage error.
func TestWaitFlag(t *testing.T) {
	parse := func(args ...string) (waitFlag, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		w := waitFlag{forever: true}
		fs.Var(&w, "wait", "")
		err := fs.Parse(args)
		return w, err
	}
	for _, tt := range []struct {
		args []string
		want waitFlag
	}{
		{nil, waitFlag{forever: true}},
		{[]string{"--wait", "forever"}, waitFlag{forever: true}},
		{[]string{"--wait", "-1"}, waitFlag{forever: true}},
		{[]string{"--wait=-1"}, waitFlag{forever: true}},
		{[]string{"--wait", "0"}, waitFlag{}},
		{[]string{"--wait", "90s"}, waitFlag{d: 90 * time.Second}},
	} {
		got, err := parse(tt.args...)
		if err != nil || got != tt.want {
			t.Errorf("%v: %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
	for _, bad := range []string{"-1s", "soon", "-2", ""} {
		if _, err := parse("--wait", bad); err == nil {
			t.Errorf("--wait %q accepted", bad)
		}
	}
	if code := run([]string{"lock", "--wait", "soon", "x"}); code != cli.ExitUsage {
		t.Errorf("lockd lock --wait soon: exit %d, want %d", code, cli.ExitUsage)
	}
}

func TestDefaultSessionName(t *testing.T) {
	n := defaultSessionName([]string{"/usr/local/bin/nightly.sh", "--secret", "x"})
	if !strings.HasSuffix(n, ":nightly.sh") || strings.Contains(n, "secret") || strings.Count(n, ":") < 2 {
		t.Errorf("defaultSessionName = %q, want HOST:PID:nightly.sh", n)
	}
	if n := defaultSessionName(nil); !strings.HasSuffix(n, ":lockd") {
		t.Errorf("defaultSessionName(no command) = %q, want HOST:PID:lockd", n)
	}
	long := strings.Repeat("é", 200) // 400 bytes
	if got := truncateUTF8(long, 255); len(got) > 255 || !utf8.ValidString(got) {
		t.Errorf("truncateUTF8 gave %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

// lockd lock -n N takes one of the N slots of a semaphore: with a slot
// free it runs the command, which sees the lock, its token and the limit;
// with every slot held it exits 3 on a try; another N is refused by the
// cluster (exit 1), and -n out of bounds or with --shared is a usage error.
func TestLock_Semaphore(t *testing.T) {
	for _, args := range [][]string{{"-n", "-1"}, {"-n", "1025"}, {"-n", "2", "--shared"}, {"-n", "two"}} {
		if code, _ := lockCLI(t, append(args, "pool", "--", "true")...); code != cli.ExitUsage {
			t.Errorf("lockd lock %v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
	c := servertest.New(t, 3)
	addr := c.URL(c.Follower(c.WaitLeader()))
	cl, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.NewSession(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := client.NewSemaphore(s, "pool", 2)
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	check := `test "$LOCKD_LOCK" = pool && test "$LOCKD_LIMIT" = 2 && test "$LOCKD_TOKEN" -gt ` + fmt.Sprint(held.Token())
	if code, errOut := lockCLI(t, "--addr", addr, "-n", "2", "--wait", "0", "pool", "--", "sh", "-c", check); code != cli.ExitOK {
		t.Fatalf("a free slot: exit %d: %s", code, errOut)
	}
	if code, errOut := lockCLI(t, "--addr", addr, "-n", "3", "--wait", "0", "pool", "--", "true"); code != cli.ExitError || !strings.Contains(errOut, "limit 2") {
		t.Fatalf("another limit: exit %d: %s", code, errOut)
	}
	other, err := client.NewSession(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := client.NewSemaphore(other, "pool", 2).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if code, errOut := lockCLI(t, "--addr", addr, "-n", "2", "--wait", "0", "pool", "--", "true"); code != exitNotAcquired {
		t.Fatalf("every slot held: exit %d, want %d: %s", code, exitNotAcquired, errOut)
	}
}

// lockCLI runs "lockd lock ARGS..." in this process and returns its exit
// code and what it wrote on standard error.
func lockCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	saved := os.Stderr
	os.Stderr = f
	code := run(append([]string{"lock"}, args...))
	os.Stderr = saved
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// A semaphore shows its limit and delayed slots in lockd watch's line and
// lockd locks' table; an ordinary lock's line is as it was.
func TestLockLine_Semaphore(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l := api.Lock{Name: "pool", Mode: api.ModeExclusive, Limit: 3, Holders: []api.Holder{{Session: "aaaaaaaaaaaa", Token: 7}},
		DelayedSlots: []api.DelayedSlot{{Session: "bbbbbbbbbbbb", Until: until}}}
	if got := lockLine(l); !strings.Contains(got, "limit=3 delayed_slots=bbbbbbbb:2030-01-02T03:04:05Z") {
		t.Errorf("watch line %q", got)
	}
	var table strings.Builder
	printLocks(&table, []api.Lock{l}, nil)
	if got := table.String(); !strings.Contains(got, "semaphore/3") || !strings.Contains(got, "2030-01-02T03:04:05Z") {
		t.Errorf("table %q", got)
	}
	plain := api.Lock{Name: "x", Mode: api.ModeExclusive, Holders: []api.Holder{{Session: "aaaaaaaaaaaa", Token: 7}}}
	if got := lockLine(plain); strings.Contains(got, "limit") {
		t.Errorf("an ordinary lock's line %q", got)
	}
}
