package etcdcompat

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockd/lockd/test/servertest"
)

// A target is a 3-member cluster that serves etcd's v3 API: lockd's
// (servertest's in-process nodes) or a real etcd's (child processes of
// etcd's own server at the version go.mod pins). Every target-agnostic
// test runs against both, as subtests named after the target, so that a
// behaviour in which they differ fails one of a pair.
type target interface {
	// Endpoints are the client addresses of the members up now.
	Endpoints() []string
	// Endpoint is member i's client address.
	Endpoint(i int) string
	// Leader waits until the members up agree on a leader among them, and
	// returns its position.
	Leader(t *testing.T) int
	// Kill stops member i at once, without a leadership transfer (lockd:
	// servertest's Crash; etcd: SIGKILL to its process).
	Kill(t *testing.T, i int)
	// Restart starts member i again on its addresses and data, and waits
	// until every member up serves under one leader.
	Restart(t *testing.T, i int)
}

// forEachTarget runs test against a new lockd cluster and a new etcd
// cluster, as the subtests "lockd" and "etcd".
func forEachTarget(t *testing.T, test func(t *testing.T, tg target)) {
	t.Run("lockd", func(t *testing.T) { test(t, newLockdTarget(t)) })
	t.Run("etcd", func(t *testing.T) { test(t, newEtcdTarget(t)) })
}

// lockdTarget is a 3-node in-process lockd cluster serving etcd's API.
type lockdTarget struct{ c *servertest.Cluster }

func newLockdTarget(t *testing.T) *lockdTarget {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	c.WaitLeader()
	return &lockdTarget{c: c}
}

func (l *lockdTarget) Endpoints() []string         { return l.c.EtcdAddrs() }
func (l *lockdTarget) Endpoint(i int) string       { return l.c.Nodes[i].EtcdAddr() }
func (l *lockdTarget) Leader(*testing.T) int       { return l.c.WaitLeader() }
func (l *lockdTarget) Kill(_ *testing.T, i int)    { l.c.Crash(i) }
func (l *lockdTarget) Restart(_ *testing.T, i int) { l.c.Start(i); l.c.WaitLeader() }

// Binaries built from the modules go.mod pins, once per test binary, into
// a directory TestMain removes.
var (
	binDir   string
	etcdOnce sync.Once
	etcdBin  string
	etcdErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcdcompat-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// goBuild builds pkg into binDir/name with the go command that runs the
// tests (the build cache makes every build after the first one quick).
func goBuild(name, pkg string) (string, error) {
	out := filepath.Join(binDir, name)
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	fmt.Fprintf(os.Stderr, "etcdcompat: built %s in %v\n", pkg, time.Since(start).Round(100*time.Millisecond))
	return out, nil
}

// etcdBinary is etcd's server (./internal/etcdserver, etcd's etcdmain).
func etcdBinary(t *testing.T) string {
	t.Helper()
	etcdOnce.Do(func() { etcdBin, etcdErr = goBuild("etcd", "./internal/etcdserver") })
	if etcdErr != nil {
		t.Fatal(etcdErr)
	}
	return etcdBin
}

// etcdTarget is a real 3-member etcd cluster: child processes on
// 127.0.0.1, ports the OS picked, data in the test's temporary directory,
// each killed by its PID when the test ends.
type etcdTarget struct {
	members []*etcdMember
}

type etcdMember struct {
	name, client string
	args         []string
	log          string
	cmd          *exec.Cmd
	exited       chan struct{}
	id           uint64 // its member ID, once it answered a Status
}

func newEtcdTarget(t *testing.T) *etcdTarget {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster of etcd processes; skipped under -short")
	}
	bin := etcdBinary(t)
	// A port picked by the OS is free only until someone else takes it:
	// a cluster whose member could not listen is started again on others.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		e := &etcdTarget{}
		if err = e.start(t, bin, attempt); err == nil {
			return e
		}
		e.killAll()
		t.Logf("etcd cluster, attempt %d: %v", attempt, err)
	}
	t.Fatalf("etcd cluster did not start: %v", err)
	return nil
}

// freePorts returns n ports the OS picked on 127.0.0.1, all free when
// it returns.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func (e *etcdTarget) start(t *testing.T, bin string, attempt int) error {
	const n = 3
	ports := freePorts(t, 2*n)
	dir := t.TempDir()
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[n+i]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		client, peer := fmt.Sprintf("http://127.0.0.1:%d", ports[i]), fmt.Sprintf("http://127.0.0.1:%d", ports[n+i])
		m := &etcdMember{name: name, client: strings.TrimPrefix(client, "http://"),
			log: filepath.Join(dir, name+".log"),
			args: []string{bin, "--name", name, "--data-dir", filepath.Join(dir, name),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
				"--initial-cluster-token", fmt.Sprintf("etcdcompat-%d", attempt),
				"--log-level", "warn",
				// A killed process loses nothing the kernel holds; only a
				// machine's crash would, which no test here makes.
				"--unsafe-no-fsync"}}
		e.members = append(e.members, m)
	}
	t.Cleanup(func() {
		e.killAll()
		if t.Failed() {
			e.logTails(t)
		}
	})
	for _, m := range e.members {
		if err := m.start(); err != nil {
			return err
		}
	}
	return e.waitServing(t, 30*time.Second)
}

func (m *etcdMember) start() error {
	f, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(m.exited)
	return nil
}

// up reports whether m's process runs.
func (m *etcdMember) up() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to m's process, by its PID, and waits for it to
// end: m is down until it is started again.
func (m *etcdMember) kill() bool {
	if m.cmd == nil {
		return true
	}
	_ = m.cmd.Process.Kill()
	select {
	case <-m.exited:
		m.cmd = nil
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func (e *etcdTarget) killAll() {
	for _, m := range e.members {
		m.kill()
	}
}

// logTails logs the end of each member's log.
func (e *etcdTarget) logTails(t *testing.T) {
	for _, m := range e.members {
		b, _ := os.ReadFile(m.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		t.Logf("etcd %s (%s), its log's end:\n%s", m.name, m.client, strings.Join(lines, "\n"))
	}
}

// leaderNow asks every member up for its status: the position of the
// leader they all name, if they agree on one that is up.
func (e *etcdTarget) leaderNow(ctx context.Context) (int, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return -1, err
	}
	defer func() { _ = cli.Close() }()
	var leader uint64
	for _, m := range e.members {
		if !m.up() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, m.client)
		cancel()
		if err != nil {
			return -1, fmt.Errorf("status of %s: %w", m.name, err)
		}
		m.id = st.Header.MemberId
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return -1, fmt.Errorf("%s names leader %x, another %x", m.name, st.Leader, leader)
		}
		leader = st.Leader
	}
	for i, m := range e.members {
		if m.up() && m.id == leader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %x is not up", leader)
}

// waitServing waits until every member up agrees on a leader up. It fails
// at once when a member's process ended without being killed.
func (e *etcdTarget) waitServing(t *testing.T, within time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		for _, m := range e.members {
			if m.cmd != nil && !m.up() {
				b, _ := os.ReadFile(m.log)
				return fmt.Errorf("etcd %s exited: %s", m.name, lastLine(b))
			}
		}
		_, err := e.leaderNow(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no leader within %v: %w", within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return string(lines[len(lines)-1])
}

func (e *etcdTarget) Endpoints() []string {
	var out []string
	for _, m := range e.members {
		if m.up() {
			out = append(out, m.client)
		}
	}
	return out
}

func (e *etcdTarget) Endpoint(i int) string { return e.members[i].client }

func (e *etcdTarget) Leader(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		i, err := e.leaderNow(ctx)
		if err == nil {
			return i
		}
		select {
		case <-ctx.Done():
			t.Fatalf("etcd: no leader within 15s: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *etcdTarget) Kill(t *testing.T, i int) {
	if !e.members[i].kill() {
		t.Fatalf("etcd %s did not end after SIGKILL", e.members[i].name)
	}
}

func (e *etcdTarget) Restart(t *testing.T, i int) {
	t.Helper()
	if err := e.members[i].start(); err != nil {
		t.Fatal(err)
	}
	if err := e.waitServing(t, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
