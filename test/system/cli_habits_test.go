package system

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// cliSessions lists the sessions through the CLI's JSON output; nil when
// the command fails.
func cliSessions(t *testing.T, c *procCluster) []api.Session {
	t.Helper()
	out, err := lockdCmd(t, c, "sessions", "--json").Output()
	var ss []api.Session
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
	byName := map[string]api.Session{}
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

// lines starts a goroutine that sends each line cmd writes on its standard
// output; call before cmd.Start.
func lines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// nextLine returns the next line of ch, failing the test if none comes
// within a generous bound.
func nextLine(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the output ended", what)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no line within 30 s", what)
	}
	return ""
}

// waitExit waits, boundedly, for cmd to exit and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCodeOf(err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s: did not exit within 30 s", what)
	}
	return -1
}

// `lockd lock NAME` without a command prints the lock's name and token
// once held, holds it until interrupted (SIGINT, SIGTERM), and then
// releases it; another `lockd lock` with the default --wait (forever)
// queues behind it and gets the lock with a higher token.
func TestCLI_LockWithoutCommandHoldsUntilInterrupted(t *testing.T) {
	c := mustStartCluster(t, 1)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		holder := lockdCmd(t, c, "lock", "held")
		out := lines(t, holder)
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		var tok uint64
		line := nextLine(t, out, "the holder's line")
		if _, err := fmt.Sscanf(line, "lock=held token=%d session=", &tok); err != nil || tok == 0 {
			t.Fatalf("holder printed %q, want lock=held token=N session=ID", line)
		}
		if code := exitCodeOf(lockdCmd(t, c, "lock", "--wait", "0", "held", "--", "true").Run()); code != 3 {
			t.Fatalf("try-lock while held exited %d, want 3", code)
		}
		waiter := lockdCmd(t, c, "lock", "held", "--", "sh", "-c", `echo "$LOCKD_TOKEN"`)
		wout := lines(t, waiter)
		if err := waiter.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "the waiter to queue", func() bool {
			out, _ := lockdCmd(t, c, "locks", "--json").Output()
			var ls []api.Lock
			return json.Unmarshal(out, &ls) == nil && len(ls) == 1 && len(ls[0].Waiters) == 1
		})
		if err := holder.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, holder, "the holder"); code != 0 {
			t.Fatalf("holder exited %d after %v, want 0", code, sig)
		}
		var next uint64
		if l := nextLine(t, wout, "the waiter's token"); !scanUint(l, &next) || next <= tok {
			t.Fatalf("the waiter ran with token %q, want one above %d", l, tok)
		}
		if code := waitExit(t, waiter, "the waiter"); code != 0 {
			t.Fatalf("waiter exited %d", code)
		}
	}
	for _, w := range []string{"forever", "-1"} {
		if code := exitCodeOf(lockdCmd(t, c, "lock", "--wait", w, "held", "--", "true").Run()); code != 0 {
			t.Fatalf("lock --wait %s of a free lock exited %d", w, code)
		}
	}
}

func scanUint(s string, v *uint64) bool {
	_, err := fmt.Sscan(s, v)
	return err == nil
}

// Sessions show the time they have left and their last renewal, from the
// leader (the API's ttl_remaining and renewed_at, the LEFT and RENEWED
// columns of `lockd sessions`, also for one session by id); a follower's
// stale answer leaves them out rather than guess, since only the leader
// sees keepalives.
func TestCLI_SessionsShowTimeLeftAndLastRenewal(t *testing.T) {
	c := mustStartCluster(t, 3)
	leader := c.waitLeader(15 * time.Second)
	follower := (leader + 1) % 3
	lb, fb := c.procs[leader].http, c.procs[follower].http
	var s api.Session
	mustDo(t, lb, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(time.Minute), Name: "timed"}, &s)

	read := func(base, query string) api.Session {
		t.Helper()
		var got api.Session
		mustDo(t, base, "GET", "/v1/sessions/"+s.ID+query, nil, &got)
		return got
	}
	first := read(lb, "")
	if first.TTLRemaining == nil || first.RenewedAt == nil {
		t.Fatalf("the leader's answer has no ttl_remaining or renewed_at: %+v", first)
	}
	if r := first.TTLRemaining.D(); r <= 0 || r > time.Minute {
		t.Fatalf("ttl_remaining %v, want within (0, 1m]", r)
	}
	mustDo(t, lb, "POST", "/v1/sessions/"+s.ID+"/keepalive", nil, nil)
	second := read(lb, "")
	if second.RenewedAt == nil || second.RenewedAt.Before(*first.RenewedAt) {
		t.Fatalf("renewed_at went from %v to %v after a keepalive", first.RenewedAt, second.RenewedAt)
	}
	if got := read(lb, "?stale"); got.TTLRemaining == nil {
		t.Fatalf("the leader's own stale answer has no ttl_remaining: %+v", got)
	}
	waitFor(t, 10*time.Second, "the follower to apply the session", func() bool {
		st, _ := doJSON(fb, "GET", "/v1/sessions/"+s.ID+"?stale", nil, nil)
		return st == 200
	})
	if got := read(fb, "?stale"); got.TTLRemaining != nil || got.RenewedAt != nil {
		t.Fatalf("a follower's stale answer claims a deadline it cannot know: %+v", got)
	}

	cli := func(addr string, args ...string) string {
		t.Helper()
		cmd := exec.Command(mustBuild(t), args...)
		cmd.Env = append(os.Environ(), "LOCKD_ADDR="+addr)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lockd %v: %v", args, err)
		}
		return string(out)
	}
	row := func(table string) []string {
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, s.ID) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no row for the session in\n%s", table)
		return nil
	}
	// ID NAME TTL LEFT RENEWED(2 words) LOCK-DELAY ...
	for _, args := range [][]string{{"sessions"}, {"sessions", s.ID}} {
		f := row(cli(fb, args...)) // a default read: the follower forwards it to the leader
		if len(f) < 6 || f[1] != "timed" || f[3] == "-" || f[5] != "ago" {
			t.Fatalf("lockd %v: row %q, want LEFT and RENEWED filled in", args, f)
		}
		if d, err := time.ParseDuration(f[3]); err != nil || d <= 0 || d > time.Minute {
			t.Fatalf("lockd %v: LEFT %q", args, f[3])
		}
	}
	if f := row(cli(fb, "sessions", "--stale")); len(f) < 5 || f[3] != "-" || f[4] != "-" {
		t.Fatalf("lockd sessions --stale on a follower: row %q, want LEFT and RENEWED as -", f)
	}
	var one api.Session
	if err := json.Unmarshal([]byte(cli(lb, "sessions", "--json", s.ID)), &one); err != nil || one.ID != s.ID || one.TTLRemaining == nil {
		t.Fatalf("lockd sessions --json ID: %+v, %v", one, err)
	}
}

// On a cluster with ACLs on, a client command without a token says how to
// give one in the CLI's terms (LOCKD_ACL_TOKEN, --acl-token), not the
// HTTP header; one with a refused token says which token was refused.
func TestCLI_NoTokenErrorNamesTheVariable(t *testing.T) {
	const boot = "system-test-bootstrap-secret"
	file := filepath.Join(t.TempDir(), "boot")
	if err := os.WriteFile(file, []byte(boot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustStartClusterAs(t, boot, 1, "--acl", "--acl-bootstrap-token-file", file)
	for _, args := range [][]string{{"locks"}, {"lock", "x", "--", "true"}, {"sessions"}} {
		cmd := lockdCmd(t, c, args...)
		cmd.Env = append(cmd.Env, "LOCKD_ACL_TOKEN=")
		var errb strings.Builder
		cmd.Stderr = &errb
		if code := exitCodeOf(cmd.Run()); code != exitError {
			t.Fatalf("lockd %v without a token: exit %d, want %d", args, code, exitError)
		}
		if msg := errb.String(); !strings.Contains(msg, "LOCKD_ACL_TOKEN") || !strings.Contains(msg, "--acl-token") ||
			strings.Contains(msg, "Authorization") {
			t.Errorf("lockd %v without a token said %q; want LOCKD_ACL_TOKEN and --acl-token, not the header", args, msg)
		}
		cmd = lockdCmd(t, c, args...)
		cmd.Env = append(cmd.Env, "LOCKD_ACL_TOKEN=not-a-token-of-this-cluster")
		errb.Reset()
		cmd.Stderr = &errb
		if code := exitCodeOf(cmd.Run()); code != exitError || !strings.Contains(errb.String(), "refused the token of LOCKD_ACL_TOKEN") {
			t.Errorf("lockd %v with an unknown token: exit %d, %q", args, code, errb.String())
		}
	}
}

// startLines starts a lockd command that keeps running and returns the
// lines of its standard output.
func startLines(t *testing.T, c *procCluster, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := lockdCmd(t, c, args...)
	out := lines(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// expectLine reads lines of ch until one contains every part, failing
// the test after a bounded number of lines or when none comes in time.
func expectLine(t *testing.T, ch <-chan string, what string, parts ...string) string {
	t.Helper()
	for range 20 {
		l := nextLine(t, ch, what)
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("%s: no line with %q among 20", what, parts)
	return ""
}

// `lockd watch lock|election|session NAME` and `lockd elect --listen NAME`
// print the object, then one line per change, through blocking queries,
// without making a session or campaigning, until interrupted (exit 0); a
// watched session that ends ends its watch.
func TestCLI_WatchStreamsChangesWithoutTakingPart(t *testing.T) {
	c := mustStartCluster(t, 1)
	base := c.procs[0].http
	wl, lockLines := startLines(t, c, "watch", "lock", "jobs/a")
	we, electLines := startLines(t, c, "watch", "election", "boss")
	wn, listenLines := startLines(t, c, "elect", "--listen", "boss")
	expectLine(t, lockLines, "the free lock", "lock=jobs/a mode=- holders=- waiters=-", "index=")
	expectLine(t, electLines, "nobody leads", "election=boss leader=none")
	expectLine(t, listenLines, "nobody leads (listen)", "election=boss leader=none")
	if ss := cliSessions(t, c); len(ss) != 0 {
		t.Fatalf("watching made sessions: %+v", ss)
	}

	var s api.Session
	mustDo(t, base, "POST", "/v1/sessions", api.CreateSessionRequest{Name: "watched"}, &s)
	ws, sessLines := startLines(t, c, "watch", "session", s.ID)
	expectLine(t, sessLines, "the new session", "session="+s.ID, `name="watched"`, "locks=- elections=-")

	var got api.AcquireResponse
	mustDo(t, base, "POST", "/v1/locks/jobs/a/acquire", api.AcquireRequest{Session: s.ID}, &got)
	expectLine(t, lockLines, "the grant", "mode=exclusive", fmt.Sprintf("holders=%s:%d", s.ID[:8], got.Token))
	expectLine(t, sessLines, "the session's lock", "locks=jobs/a")
	mustDo(t, base, "POST", "/v1/elections/boss/campaign", api.CampaignRequest{Session: s.ID, Value: "v1"}, nil)
	for _, ch := range []<-chan string{electLines, listenLines} {
		expectLine(t, ch, "the new leader", "leader="+s.ID, `value="v1"`)
	}
	expectLine(t, sessLines, "the session's election", "elections=boss")
	mustDo(t, base, "POST", "/v1/locks/jobs/a/release", api.SessionRequest{Session: s.ID}, nil)
	expectLine(t, lockLines, "the release", "mode=- holders=-")
	mustDo(t, base, "DELETE", "/v1/sessions/"+s.ID, nil, nil)
	for _, ch := range []<-chan string{electLines, listenLines} {
		expectLine(t, ch, "the leader's end", "election=boss leader=none")
	}
	expectLine(t, sessLines, "the session's end", "session="+s.ID+" ended")
	if code := waitExit(t, ws, "watch session after its session ended"); code != 0 {
		t.Fatalf("watch session exited %d after the session ended, want 0", code)
	}
	for _, w := range []struct {
		cmd *exec.Cmd
		sig syscall.Signal
	}{{wl, syscall.SIGINT}, {we, syscall.SIGTERM}, {wn, syscall.SIGINT}} {
		if err := w.cmd.Process.Signal(w.sig); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, w.cmd, strings.Join(w.cmd.Args[1:], " ")); code != 0 {
			t.Fatalf("%v exited %d after %v, want 0", w.cmd.Args[1:], code, w.sig)
		}
	}
	if code := exitCodeOf(lockdCmd(t, c, "watch", "session", "0123456789abcdef0123456789abcdef").Run()); code != exitError {
		t.Fatalf("watch of a session that does not exist exited %d, want %d", code, exitError)
	}
	if code := exitCodeOf(lockdCmd(t, c, "watch", "queue", "x").Run()); code != 2 {
		t.Fatalf("watch of an unknown kind exited %d, want 2", code)
	}
}

// An ACL token may carry an expiry (`acl token create --expiration-ttl`,
// the API's expiration_ttl): the list shows it, the token works until the
// leader's wall clock reaches it, is refused from then on (401, told in
// the CLI's terms), and the leader deletes it from the table. The test
// steps the node's wall clock (--unsafe-fault-injection's wall_step)
// rather than wait an hour.
func TestCLI_ACLTokenExpires(t *testing.T) {
	const boot = "system-test-bootstrap-secret"
	file := filepath.Join(t.TempDir(), "boot")
	if err := os.WriteFile(file, []byte(boot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustStartClusterAs(t, boot, 1, "--acl", "--acl-bootstrap-token-file", file, "--unsafe-fault-injection")
	as := func(token string, args ...string) (string, string, int) {
		cmd := lockdCmd(t, c, args...)
		cmd.Env = append(cmd.Env, "LOCKD_ACL_TOKEN="+token)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), exitCodeOf(err)
	}
	out, errOut, code := as(boot, "acl", "token", "create", "--json", "--expiration-ttl", "1h", "--rule", "lock:jobs/:write")
	var tok api.Token
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.ExpirationTime == nil {
		t.Fatalf("acl token create --expiration-ttl 1h: exit %d, %s%s", code, out, errOut)
	}
	if left := time.Until(*tok.ExpirationTime); left <= 0 || left > 2*time.Hour {
		t.Fatalf("expiration_time %v is not about an hour from now", tok.ExpirationTime)
	}
	if _, _, code := as(boot, "acl", "token", "create", "--expiration-ttl", "-1s", "--rule", "lock:jobs/:write"); code != exitError {
		t.Fatalf("a negative expiration TTL: exit %d, want %d", code, exitError)
	}
	out, _, code = as(boot, "acl", "token", "list")
	if code != 0 || !strings.Contains(out, tok.AccessorID) || !strings.Contains(out, tok.ExpirationTime.UTC().Format(time.RFC3339)) ||
		!strings.Contains(out, "never") {
		t.Fatalf("acl token list does not show the expiry (and never for the bootstrap token): exit %d\n%s", code, out)
	}
	if out, errOut, code := as(tok.Secret, "lock", "jobs/a", "--", "true"); code != 0 {
		t.Fatalf("lock with the token before its expiry: exit %d, %s%s", code, out, errOut)
	}
	step := api.Duration(2 * time.Hour)
	if st, e := doJSONAs(boot, c.procs[0].http, "POST", "/v1/debug/clock", api.ClockSkew{WallStep: &step}, nil); st != 200 {
		t.Fatalf("step the wall clock: %d %+v", st, e)
	}
	_, errOut, code = as(tok.Secret, "lock", "jobs/a", "--", "true")
	if code != exitError || !strings.Contains(errOut, "expired") || !strings.Contains(errOut, "LOCKD_ACL_TOKEN") {
		t.Fatalf("lock with the token after its expiry: exit %d, %q", code, errOut)
	}
	waitFor(t, 15*time.Second, "the leader to delete the expired token", func() bool {
		out, _, code := as(boot, "acl", "token", "list")
		return code == 0 && !strings.Contains(out, tok.AccessorID)
	})
	if out, errOut, code := as(boot, "locks"); code != 0 {
		t.Fatalf("the bootstrap token (no expiry) after the step: exit %d, %s%s", code, out, errOut)
	}
}
