package etcdcompat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEtcdctl runs etcdctl, built from its published module at the
// version go.mod pins, against each target, and checks what it prints.
func TestEtcdctl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcdctl and starts clusters; skipped under -short")
	}
	bin := etcdctlBinary(t)
	forEachTarget(t, func(t *testing.T, tg target) {
		ctl := &etcdctl{bin: bin, endpoints: tg.Endpoints()}
		t.Run("PutGetDel", func(t *testing.T) { testCtlPutGetDel(t, ctl) })
		t.Run("Watch", func(t *testing.T) { testCtlWatch(t, ctl) })
		t.Run("Lease", func(t *testing.T) { testCtlLease(t, ctl) })
		t.Run("Lock", func(t *testing.T) { testCtlLock(t, ctl) })
		t.Run("Elect", func(t *testing.T) { testCtlElect(t, ctl) })
		t.Run("Txn", func(t *testing.T) { testCtlTxn(t, ctl) })
		t.Run("Endpoint", func(t *testing.T) { testCtlEndpoint(t, ctl, tg) })
	})
}

var (
	ctlOnce    sync.Once
	etcdctlBin string
	ctlErr     error
)

// etcdctlBinary is etcdctl from its published module (go.mod's tool
// directive pins it), built once per test binary.
func etcdctlBinary(t *testing.T) string {
	t.Helper()
	ctlOnce.Do(func() { etcdctlBin, ctlErr = goBuild("etcdctl", "go.etcd.io/etcd/etcdctl/v3") })
	if ctlErr != nil {
		t.Fatal(ctlErr)
	}
	return etcdctlBin
}

// etcdctl runs the etcdctl binary against endpoints.
type etcdctl struct {
	bin       string
	endpoints []string
}

func (c *etcdctl) args(args []string) []string {
	return append([]string{"--endpoints=" + strings.Join(c.endpoints, ","), "--dial-timeout=5s", "--command-timeout=10s"}, args...)
}

// run runs etcdctl with args and stdin, within 20 s, and returns what it
// printed on stdout and stderr, and how it ended.
func (c *etcdctl) run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, c.args(args)...)
	cmd.SysProcAttr = childAttr()
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// ok runs etcdctl with args and returns its stdout, failing the test when
// it did not exit 0.
func (c *etcdctl) ok(t *testing.T, args ...string) string {
	t.Helper()
	return c.okIn(t, "", args...)
}

func (c *etcdctl) okIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := c.run(t, stdin, args...)
	if err != nil {
		t.Fatalf("etcdctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// expect runs etcdctl with args and checks its stdout is want.
func (c *etcdctl) expect(t *testing.T, want string, args ...string) {
	t.Helper()
	if got := c.ok(t, args...); got != want {
		t.Fatalf("etcdctl %s printed %q, want %q", strings.Join(args, " "), got, want)
	}
}

// child is etcdctl running in the background, its stdout read line by
// line.
type child struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan struct{}
	err    error // how it ended, once done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts etcdctl with args in the background, for at most 60 s; it
// is killed by its PID when the test ends.
func (c *etcdctl) start(t *testing.T, args ...string) *child {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, c.bin, c.args(args)...)
	cmd.SysProcAttr = childAttr()
	cmd.WaitDelay = 2 * time.Second
	ch := &child{t: t, name: strings.Join(args, " "), cmd: cmd, lines: make(chan string, 64), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = ch.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(ch.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
	}()
	go func() {
		ch.err = cmd.Wait()
		cancel()
		close(ch.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch.done
	})
	return ch
}

// next returns the next line the child prints, failing the test if none
// comes within d.
func (ch *child) next(d time.Duration) string {
	ch.t.Helper()
	select {
	case l, ok := <-ch.lines:
		if !ok {
			<-ch.done
			ch.t.Fatalf("etcdctl %s ended (%v) before printing another line; stderr:\n%s", ch.name, ch.err, ch.stderr)
		}
		return l
	case <-time.After(d):
		ch.t.Fatalf("etcdctl %s printed no line within %v; stderr:\n%s", ch.name, d, ch.stderr)
		return ""
	}
}

// expectLines checks the next lines the child prints.
func (ch *child) expectLines(want ...string) {
	ch.t.Helper()
	for i, w := range want {
		if got := ch.next(10 * time.Second); got != w {
			ch.t.Fatalf("etcdctl %s: line %d of %q is %q", ch.name, i+1, want, got)
		}
	}
}

// quiet checks the child prints nothing for d.
func (ch *child) quiet(d time.Duration) {
	ch.t.Helper()
	select {
	case l, ok := <-ch.lines:
		ch.t.Fatalf("etcdctl %s printed %q (%v), want nothing yet", ch.name, l, ok)
	case <-time.After(d):
	}
}

// stop sends SIGTERM to the child by its PID and returns how it ended
// (etcdctl's watch, lock and elect commands end on it, a leader
// resigning first).
func (ch *child) stop() error {
	ch.t.Helper()
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
	case <-time.After(10 * time.Second):
		_ = ch.cmd.Process.Kill()
		<-ch.done
		ch.t.Fatalf("etcdctl %s did not end within 10s of SIGTERM", ch.name)
	}
	return ch.err
}

// wait waits for the child to exit by itself, and fails the test unless
// it exited 0.
func (ch *child) wait(d time.Duration) {
	ch.t.Helper()
	select {
	case <-ch.done:
	case <-time.After(d):
		ch.t.Fatalf("etcdctl %s did not end within %v", ch.name, d)
	}
	if ch.err != nil {
		ch.t.Fatalf("etcdctl %s: %v; stderr:\n%s", ch.name, ch.err, ch.stderr)
	}
}

// ctlHeader and ctlKV are etcdctl's -w json output (protobuf's JSON
// names; bytes in base64, which encoding/json decodes into []byte).
type ctlHeader struct {
	ClusterID uint64 `json:"cluster_id"`
	MemberID  uint64 `json:"member_id"`
	Revision  int64  `json:"revision"`
}

type ctlKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease"`
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("etcdctl's JSON %q: %v", out, err)
	}
	return v
}

// putRev puts key=value and returns the revision etcdctl's JSON answer
// gave.
func (c *etcdctl) putRev(t *testing.T, key, value string) int64 {
	t.Helper()
	p := decode[struct{ Header ctlHeader }](t, c.ok(t, "put", "-w", "json", key, value))
	if p.Header.Revision == 0 {
		t.Fatalf("put %s: no revision in its answer", key)
	}
	return p.Header.Revision
}

// testCtlPutGetDel: put, get (one key, a prefix, values only, at a past
// revision, -w json) and del (one key, a prefix with --prev-kv, a missing
// key).
func testCtlPutGetDel(t *testing.T, c *etcdctl) {
	c.expect(t, "OK\n", "put", "ctl/a", "1")
	first := c.putRev(t, "ctl/b", "2")
	c.expect(t, "ctl/a\n1\n", "get", "ctl/a")
	c.expect(t, "ctl/a\n1\nctl/b\n2\n", "get", "--prefix", "ctl/")
	c.expect(t, "1\n2\n", "get", "--prefix", "--print-value-only", "ctl/")
	c.expect(t, "ctl/b\n\n", "get", "--prefix", "--keys-only", "--limit=1", "--sort-by=KEY", "--order=DESCEND", "ctl/")
	c.expect(t, "", "get", "ctl/none")

	second := c.putRev(t, "ctl/b", "two")
	g := decode[struct {
		Header ctlHeader
		Kvs    []ctlKV
		Count  int64
	}](t, c.ok(t, "get", "-w", "json", "ctl/b"))
	if len(g.Kvs) != 1 || g.Count != 1 || string(g.Kvs[0].Key) != "ctl/b" || string(g.Kvs[0].Value) != "two" ||
		g.Kvs[0].CreateRevision != first || g.Kvs[0].ModRevision != second || g.Kvs[0].Version != 2 ||
		g.Header.Revision < second || g.Header.MemberID == 0 || g.Header.ClusterID == 0 {
		t.Fatalf("get -w json after puts at revisions %d and %d: %+v", first, second, g)
	}
	c.expect(t, "ctl/b\n2\n", "get", "--rev="+strconv.FormatInt(first, 10), "ctl/b")

	c.expect(t, "1\n", "del", "ctl/a")
	c.expect(t, "0\n", "del", "ctl/a")
	c.expect(t, "1\nctl/b\ntwo\n", "del", "--prefix", "--prev-kv", "ctl/")
	c.expect(t, "", "get", "--prefix", "ctl/")
}

// testCtlWatch: etcdctl watch KEY, started before the puts it must see
// (it prints nothing when its watch is made, so puts go on until it
// prints one), and watch --prefix --prev-kv --rev from a past revision.
func testCtlWatch(t *testing.T, c *etcdctl) {
	w := c.start(t, "watch", "ctlw/k")
	var first int
	for n := 1; first == 0; n++ {
		c.expect(t, "OK\n", "put", "ctlw/k", fmt.Sprint(n))
		select {
		case l := <-w.lines:
			if l != "PUT" {
				t.Fatalf("watch printed %q, want PUT", l)
			}
			w.expectLines("ctlw/k")
			first, _ = strconv.Atoi(w.next(10 * time.Second))
			if first < 1 || first > n {
				t.Fatalf("watch's first event has value %d; %d put", first, n)
			}
			// Every put after the first it saw, in order.
			for m := first + 1; m <= n; m++ {
				w.expectLines("PUT", "ctlw/k", fmt.Sprint(m))
			}
		case <-time.After(300 * time.Millisecond):
		}
		if n > 50 {
			t.Fatalf("watch printed nothing after %d puts; stderr:\n%s", n, w.stderr)
		}
	}
	c.expect(t, "OK\n", "put", "ctlw/k", "last")
	c.expect(t, "1\n", "del", "ctlw/k")
	w.expectLines("PUT", "ctlw/k", "last", "DELETE", "ctlw/k", "")
	_ = w.stop() // etcdctl's watch does not catch SIGTERM: it ends by it

	rev := c.putRev(t, "ctlw/p/a", "0")
	c.expect(t, "OK\n", "put", "ctlw/p/a", "1")
	p := c.start(t, "watch", "--prefix", "--prev-kv", "--rev="+strconv.FormatInt(rev, 10), "ctlw/p/")
	p.expectLines("PUT", "ctlw/p/a", "0", "PUT", "ctlw/p/a", "0", "ctlw/p/a", "1")
	c.expect(t, "1\n", "del", "ctlw/p/a")
	p.expectLines("DELETE", "ctlw/p/a", "1", "ctlw/p/a", "")
	_ = p.stop()
}

// testCtlLease: lease grant, put --lease, keep-alive --once, timetolive
// (--keys), list, revoke, and what each says of a revoked lease.
func testCtlLease(t *testing.T, c *etcdctl) {
	m := regexp.MustCompile(`^lease ([0-9a-f]{16}) granted with TTL\(60s\)\n$`).FindStringSubmatch(c.ok(t, "lease", "grant", "60"))
	if m == nil {
		t.Fatal("lease grant printed no lease")
	}
	id := m[1]
	c.expect(t, "OK\n", "put", "--lease="+id, "ctll/a", "v")
	g := decode[struct{ Kvs []ctlKV }](t, c.ok(t, "get", "-w", "json", "ctll/a"))
	if len(g.Kvs) != 1 || fmt.Sprintf("%016x", g.Kvs[0].Lease) != id {
		t.Fatalf("a key put with lease %s: %+v", id, g)
	}
	c.expect(t, "lease "+id+" keepalived with TTL(60)\n", "lease", "keep-alive", "--once", id)
	ttl := c.ok(t, "lease", "timetolive", "--keys", id)
	m = regexp.MustCompile(`^lease ` + id + ` granted with TTL\(60s\), remaining\((\d+)s\), attached keys\(\[ctll/a\]\)\n$`).FindStringSubmatch(ttl)
	if m == nil {
		t.Fatalf("lease timetolive --keys printed %q", ttl)
	}
	if left, _ := strconv.Atoi(m[1]); left < 50 || left > 60 {
		t.Fatalf("lease timetolive: %ds left of 60 just after a keep-alive", left)
	}
	if list := c.ok(t, "lease", "list"); !strings.HasPrefix(list, "found ") || !strings.Contains(list, "\n"+id+"\n") {
		t.Fatalf("lease list printed %q, without %s", list, id)
	}
	c.expect(t, "lease "+id+" revoked\n", "lease", "revoke", id)
	c.expect(t, "", "get", "ctll/a")
	c.expect(t, "lease "+id+" already expired\n", "lease", "timetolive", id)
	for _, args := range [][]string{{"lease", "keep-alive", "--once", id}, {"lease", "revoke", id}} {
		out, errOut, err := c.run(t, "", args...)
		if err == nil || !strings.Contains(errOut, "etcdserver: requested lease not found") {
			t.Fatalf("etcdctl %s of a revoked lease: %v, stdout %q, stderr %q", strings.Join(args, " "), err, out, errOut)
		}
	}
}

// testCtlLock: lock NAME -- CMD runs CMD holding the lock; a second lock
// of the name waits while a first holder's command runs.
func testCtlLock(t *testing.T, c *etcdctl) {
	out := c.ok(t, "lock", "ctl-lock", "--", "sh", "-c", `echo "held $ETCD_LOCK_KEY"`)
	if !regexp.MustCompile(`^held ctl-lock/[0-9a-f]+\n$`).MatchString(out) {
		t.Fatalf("lock -- sh printed %q", out)
	}
	// Both commands append to one file: the order they ran in.
	file := filepath.Join(t.TempDir(), "order")
	first := c.start(t, "lock", "ctl-lock", "--", "sh", "-c", `echo a-in >>"$0"; echo a-in; sleep 2; echo a-out >>"$0"`, file)
	first.expectLines("a-in")
	second := c.start(t, "lock", "ctl-lock", "--", "sh", "-c", `echo b-in >>"$0"`, file)
	first.wait(15 * time.Second)
	second.wait(15 * time.Second)
	if b, err := os.ReadFile(file); err != nil || string(b) != "a-in\na-out\nb-in\n" {
		t.Fatalf("the two holders' commands ran in the order %q (%v), want the first's whole before the second's", b, err)
	}
	c.expect(t, "", "get", "--prefix", "ctl-lock/")
}

// testCtlElect: elect NAME PROPOSAL prints the leader's key and value
// once it leads; elect -l observes every leader; a second candidate leads
// once the first resigns (on SIGTERM).
func testCtlElect(t *testing.T, c *etcdctl) {
	key := regexp.MustCompile(`^ctl-elect/[0-9a-f]+$`)
	a := c.start(t, "elect", "ctl-elect", "alpha")
	aKey := a.next(10 * time.Second)
	if !key.MatchString(aKey) {
		t.Fatalf("elect printed %q, want the leader's key", aKey)
	}
	a.expectLines("alpha")
	obs := c.start(t, "elect", "-l", "ctl-elect")
	obs.expectLines(aKey, "alpha")
	b := c.start(t, "elect", "ctl-elect", "beta")
	b.quiet(500 * time.Millisecond)
	if err := a.stop(); err != nil {
		t.Fatalf("the leader's elect ended with %v on SIGTERM; stderr:\n%s", err, a.stderr)
	}
	bKey := b.next(10 * time.Second)
	if !key.MatchString(bKey) || bKey == aKey {
		t.Fatalf("the second candidate printed %q (the first's key %q)", bKey, aKey)
	}
	b.expectLines("beta")
	obs.expectLines(bKey, "beta")
	if err := b.stop(); err != nil {
		t.Fatalf("elect ended with %v on SIGTERM; stderr:\n%s", err, b.stderr)
	}
	if err := obs.stop(); err != nil {
		t.Fatalf("elect -l ended with %v on SIGTERM; stderr:\n%s", err, obs.stderr)
	}
	c.expect(t, "", "get", "--prefix", "ctl-elect/")
}

// testCtlTxn: txn reading compares and operations from stdin, as etcdctl
// documents its interactive format, on both branches.
func testCtlTxn(t *testing.T, c *etcdctl) {
	c.expect(t, "OK\n", "put", "ctlt/a", "1")
	in := `value("ctlt/a") = "1"
version("ctlt/a") = "1"
mod("ctlt/a") > "0"

put ctlt/a 2
get ctlt/a

get ctlt/a

`
	if out := c.okIn(t, in, "txn"); out != "SUCCESS\n\nOK\n\nctlt/a\n2\n" {
		t.Fatalf("txn whose compares hold printed %q", out)
	}
	if out := c.okIn(t, in, "txn"); out != "FAILURE\n\nctlt/a\n2\n" {
		t.Fatalf("txn whose compares fail printed %q", out)
	}
	in = `create("ctlt/none") = "0"

put ctlt/b x
del ctlt/a


`
	if out := c.okIn(t, in, "txn"); out != "SUCCESS\n\nOK\n\n1\n" {
		t.Fatalf("txn putting and deleting printed %q", out)
	}
	c.expect(t, "ctlt/b\nx\n", "get", "--prefix", "ctlt/")
}

// testCtlEndpoint: endpoint status of every member names one leader among
// them; endpoint health (which reads, then lists the alarms) is healthy;
// member list names every member with its client URL, and endpoint
// status --cluster finds every member's endpoint through it.
func testCtlEndpoint(t *testing.T, c *etcdctl, tg target) {
	type status struct {
		Endpoint string
		Status   struct {
			Header  ctlHeader
			Version string
			Leader  uint64
		}
	}
	sts := decode[[]status](t, c.ok(t, "endpoint", "status", "-w", "json"))
	if len(sts) != len(c.endpoints) {
		t.Fatalf("endpoint status of %d endpoints: %+v", len(c.endpoints), sts)
	}
	members := map[uint64]bool{}
	for i, s := range sts {
		if s.Endpoint != c.endpoints[i] || s.Status.Header.MemberID == 0 || members[s.Status.Header.MemberID] {
			t.Fatalf("endpoint status: %+v", sts)
		}
		members[s.Status.Header.MemberID] = true
		if s.Status.Leader != sts[0].Status.Leader {
			t.Fatalf("endpoint status: members name different leaders: %+v", sts)
		}
		// docs/etcd.md, "Maintenance: Status" (differs): lockd's version is
		// that of etcd's API types it is built with, not a server's.
		if _, isEtcd := tg.(*etcdTarget); (isEtcd && s.Status.Version != "3.6.16") || s.Status.Version == "" {
			t.Fatalf("endpoint status: version %q", s.Status.Version)
		}
	}
	if !members[sts[0].Status.Leader] {
		t.Fatalf("endpoint status: the leader %x is none of the members: %+v", sts[0].Status.Leader, sts)
	}

	type health struct {
		Endpoint string
		Health   bool
		Error    string
	}
	out, errOut, err := c.run(t, "", "endpoint", "health", "-w", "json")
	hs := decode[[]health](t, out)
	if err != nil || len(hs) != len(c.endpoints) {
		t.Fatalf("endpoint health: %v %+v, stderr %q", err, hs, errOut)
	}
	for _, h := range hs {
		if !h.Health || h.Error != "" {
			t.Fatalf("endpoint health: %+v", hs)
		}
	}

	type memberList struct {
		Members []struct {
			ID         uint64
			Name       string
			ClientURLs []string
		}
	}
	ml := decode[memberList](t, c.ok(t, "member", "list", "-w", "json"))
	var urls []string
	for _, m := range ml.Members {
		if m.ID == 0 || m.Name == "" || len(m.ClientURLs) != 1 || !members[m.ID] {
			t.Fatalf("member list: %+v (the members of endpoint status: %v)", ml, members)
		}
		urls = append(urls, strings.TrimPrefix(m.ClientURLs[0], "http://"))
	}
	slices.Sort(urls)
	if want := slices.Sorted(slices.Values(c.endpoints)); !slices.Equal(urls, want) {
		t.Fatalf("member list's client URLs %v, want the endpoints %v", urls, want)
	}
	// --cluster: the endpoints come from the member list.
	all := decode[[]status](t, c.ok(t, "endpoint", "status", "--cluster", "-w", "json"))
	if len(all) != len(c.endpoints) {
		t.Fatalf("endpoint status --cluster: %+v", all)
	}
}
