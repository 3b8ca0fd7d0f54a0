package system

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/proccluster"
	"github.com/lockd/lockd/test/testnet"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mustBuild builds cmd/lockd once per test binary, with the build tag
// lockd_unsafe (proccluster.UnsafeTag): the tests start nodes with
// --unsafe-fault-injection, which a default build does not have.
func mustBuild(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds lockd and starts processes; skipped under -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockd-system-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lockd")
		out, err := exec.Command("go", "build", "-tags", proccluster.UnsafeTag, "-o", dir+string(filepath.Separator),
			"github.com/lockd/lockd/cmd/lockd", "github.com/lockd/lockd/cmd/lockd-bench").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// mustBuildBench returns lockd-bench, built beside mustBuild's lockd (which
// it starts).
func mustBuildBench(t *testing.T) string {
	return filepath.Join(filepath.Dir(mustBuild(t)), "lockd-bench")
}

// freePorts returns n distinct free addresses on 127.0.0.1 (see
// test/testnet for why not port 0).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	addrs, err := testnet.Ports("127.0.0.1", n)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// proc is one lockd process.
type proc struct {
	t       *testing.T
	id      string
	args    []string
	http    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// procCluster is a cluster of real lockd processes.
type procCluster struct {
	t     *testing.T
	procs []*proc
	// token is the ACL secret the harness's own requests send ("" when
	// the cluster has ACLs off).
	token string
}

func mustStartCluster(t *testing.T, n int, extra ...string) *procCluster {
	t.Helper()
	return mustStartClusterAs(t, "", n, extra...)
}

// mustStartClusterAs is mustStartCluster for a cluster whose API needs the
// ACL token secret.
func mustStartClusterAs(t *testing.T, token string, n int, extra ...string) *procCluster {
	t.Helper()
	bin := mustBuild(t)
	dir := t.TempDir()
	c := &procCluster{t: t, token: token}
	var initial, httpList []string
	peers, https := make([]string, n), make([]string, n)
	addrs := freePorts(t, 2*n)
	for i := range n {
		peers[i], https[i] = addrs[2*i], addrs[2*i+1]
		initial = append(initial, fmt.Sprintf("n%d=%s", i+1, peers[i]))
		httpList = append(httpList, fmt.Sprintf("n%d=http://%s", i+1, https[i]))
	}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		httpAddr := https[i]
		args := append([]string{"serve", "--id", id, "--http", httpAddr, "--peer", peers[i],
			"--data", filepath.Join(dir, id), "--initial-cluster", strings.Join(initial, ","),
			"--cluster-http", strings.Join(httpList, ",")}, extra...)
		c.procs = append(c.procs, &proc{t: t, id: id, args: append([]string{bin}, args...), http: "http://" + httpAddr,
			logPath: filepath.Join(dir, id+".log")})
	}
	t.Cleanup(c.killAll)
	for _, p := range c.procs {
		p.start()
	}
	c.waitLeader(15 * time.Second)
	return c
}

func (p *proc) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); _ = logf.Close(); close(p.done) }()
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v to %s: %v", sig, p.id, err)
	}
}

// kill9 sends SIGKILL and waits for the process to be reaped.
func (p *proc) kill9() {
	if !p.running() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once resumed by the kernel; be explicit
	p.cmd.Process.Kill()
	<-p.done
}

func (c *procCluster) killAll() {
	for _, p := range c.procs {
		p.kill9()
	}
	if c.t.Failed() {
		for _, p := range c.procs {
			b, _ := os.ReadFile(p.logPath)
			c.t.Logf("---- log of %s ----\n%s", p.id, tail(b, 60))
		}
	}
}

func tail(b []byte, lines int) string {
	parts := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// waitLeader waits until a running node reports itself leader with a
// master lease and returns its position.
func (c *procCluster) waitLeader(within time.Duration) int {
	c.t.Helper()
	leader := -1
	waitFor(c.t, within, "a leader with a master lease", func() bool {
		for i, p := range c.procs {
			if !p.running() {
				continue
			}
			var cl api.Cluster
			if st, _ := doJSONAs(c.token, p.http, "GET", "/v1/cluster", nil, &cl); st == 200 &&
				(cl.State == "Leader" || cl.State == "coordinator") && cl.MasterLeaseRemaining != nil && cl.MasterLeaseRemaining.D() > 0 {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 3 * time.Second}

// doJSON sends a request and decodes a 2xx JSON answer into out.
func doJSON(base, method, path string, in, out any) (int, api.Error) {
	return doJSONAs("", base, method, path, in, out)
}

// doJSONAs is doJSON with the ACL token secret token ("" sends none).
func doJSONAs(token, base, method, path string, in, out any) (int, api.Error) {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, api.Error{Code: "transport", Message: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e api.Error
		_ = json.Unmarshal(raw, &e)
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, api.Error{Code: "decode", Message: fmt.Sprintf("%s %s answered %d with %q: %v", method, path, resp.StatusCode, raw, err)}
		}
	}
	return resp.StatusCode, api.Error{}
}

func mustDo(t *testing.T, base, method, path string, in, out any) {
	t.Helper()
	if st, e := doJSON(base, method, path, in, out); st < 200 || st >= 300 {
		t.Fatalf("%s %s%s: %d %s %s", method, base, path, st, e.Code, e.Message)
	}
}

func newSession(t *testing.T, base string, ttl time.Duration) string {
	t.Helper()
	zero := api.Duration(0)
	var s api.Session
	req := api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &zero}
	// A node that does not know the leader yet (just after start) answers
	// 503 no_leader, which promises nothing was applied: ask again.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st, e := doJSON(base, "POST", "/v1/sessions", req, &s)
		if st == http.StatusCreated {
			return s.ID
		}
		if st != http.StatusServiceUnavailable || e.Code != api.CodeNoLeader {
			t.Fatalf("POST %s/v1/sessions: %d %s %s", base, st, e.Code, e.Message)
		}
	}
	mustDo(t, base, "POST", "/v1/sessions", req, &s)
	return s.ID
}

func acquire(base, name, session string) (uint64, int, api.Error) {
	var r api.AcquireResponse
	st, e := doJSON(base, "POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session}, &r)
	return r.Token, st, e
}

// startCluster starts the process cluster of cfg, whose Binary and Dir the
// test has set, and waits for a leader. The cluster is closed when the
// test ends, and if the test failed, each node's log ends in the test's
// log.
func startCluster(t *testing.T, cfg proccluster.Config) (*proccluster.Cluster, *proccluster.Node) {
	t.Helper()
	c, err := proccluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, n := range c.Nodes {
				b, _ := os.ReadFile(n.LogPath)
				t.Logf("---- log of %s ----\n%s", n.ID, tail(b, 40))
			}
		}
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(context.Background(), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c, leader
}
