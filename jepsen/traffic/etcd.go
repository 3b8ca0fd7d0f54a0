package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// The etcd-client workload runs etcd's own Go client and its concurrency
// recipes (concurrency.Mutex on EtcdMutexName, concurrency.Election on
// EtcdElectionName) against the nodes' etcd ports, in a child process
// built from the module jepsen/etcdclient (lockd's module does not depend
// on etcd's client; BuildEtcdClient builds it). The child stamps its
// operations on the harness clock (history.ClockBase) and writes them to a
// file, which Wait adds to the history; the lock and election checkers
// then hold them to the model of lockd's own locks and elections. Its
// package comment says what it records and why that is sound.

// Names the etcd-client workload uses: the prefixes of its Mutex's and its
// Election's keys.
const (
	EtcdMutexName    = "jepsen/etcd/m0"
	EtcdElectionName = "jepsen/etcd/e0"
)

// IsEtcdName reports whether name is one of the etcd workload's.
func IsEtcdName(name string) bool { return name == EtcdMutexName || name == EtcdElectionName }

// Environment of the etcd client child (jepsen/etcdclient reads it).
const (
	envEtcdEndpoints = "LOCKD_JEPSEN_ETCD_ENDPOINTS"
	envEtcdOut       = "LOCKD_JEPSEN_ETCD_OUT"
	envClockBase     = "LOCKD_JEPSEN_CLOCK_BASE"
	envDrift         = "LOCKD_JEPSEN_DRIFT"
	envSeed          = "LOCKD_JEPSEN_SEED"
	envEtcdMutex     = "LOCKD_JEPSEN_ETCD_MUTEX"
	envEtcdElection  = "LOCKD_JEPSEN_ETCD_ELECTION"
	envEtcdClient    = "LOCKD_JEPSEN_ETCD_CLIENT"
)

// etcdClientNumber is the first client number of the child's workers in
// the history.
const etcdClientNumber = 500

// BuildEtcdClient builds the etcd client child into dir and returns its
// path. The module is found beside lockd's (go env GOMOD).
func BuildEtcdClient(dir string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("traffic: go env GOMOD: %w", err)
	}
	src := filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "jepsen", "etcdclient")
	bin, err := filepath.Abs(filepath.Join(dir, "etcdclient"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("traffic: build the etcd client in %s: %w\n%s", src, err, out)
	}
	return bin, nil
}

// etcdTTL is the TTL of the child's leases: the run's, rounded up to
// whole seconds, as etcd's leases count them.
func (t *Traffic) etcdTTL() time.Duration {
	return time.Duration(math.Ceil(max(t.cfg.TTL, time.Second).Seconds())) * time.Second
}

// startEtcdClient starts the child; it runs until ctx's deadline.
func (t *Traffic) startEtcdClient(ctx context.Context) error {
	if t.cfg.EtcdClient == "" || len(t.cfg.EtcdEndpoints) == 0 {
		return errors.New("traffic: the etcd workload needs the etcd client child (BuildEtcdClient) and nodes serving etcd's API")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Hour)
	}
	out := filepath.Join(t.cfg.LogDir, "etcd-client.jsonl")
	logf, err := os.Create(filepath.Join(t.cfg.LogDir, "etcd-client.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(t.cfg.EtcdClient)
	cmd.Env = append(os.Environ(), envEtcdEndpoints+"="+joinComma(t.cfg.EtcdEndpoints), envEtcdOut+"="+out,
		fmt.Sprintf("%s=%d", EnvDeadline, deadline.UnixMilli()), fmt.Sprintf("%s=%d", envClockBase, t.rec.ClockBase()),
		EnvTTL+"="+t.etcdTTL().String(), fmt.Sprintf("%s=%g", envDrift, DriftBound(t.cfg.MaxClockDrift)),
		fmt.Sprintf("%s=%d", envSeed, t.cfg.Seed), envEtcdMutex+"="+EtcdMutexName, envEtcdElection+"="+EtcdElectionName,
		fmt.Sprintf("%s=%d", envEtcdClient, etcdClientNumber))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("traffic: start the etcd client: %w", err)
	}
	c := &Child{Name: "etcd-client", cmd: cmd, done: make(chan struct{}), rec: t.rec}
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(c.done) }()
	t.etcd, t.etcdOut, t.etcdDeadline = c, out, deadline
	return nil
}

// EtcdChild returns the etcd client child, or nil when the workload does
// not run: faults that need a quiet log pause it as they pause the fence
// clients.
func (t *Traffic) EtcdChild() *Child { return t.etcd }

// etcdGrace is how long past its deadline the child may take to end its
// leases and exit before it is killed.
const etcdGrace = 15 * time.Second

// waitEtcdClient waits for the child to exit and adds what it recorded to
// the history. A child that did not exit cleanly is noted in the
// timeline; the operations it wrote before are still added (each line is
// a whole operation).
func (t *Traffic) waitEtcdClient() {
	c := t.etcd
	if c == nil {
		return
	}
	_ = c.Resume()
	select {
	case <-c.done:
	case <-time.After(time.Until(t.etcdDeadline.Add(etcdGrace))):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.rec.Eventf("the etcd client did not exit %v after its deadline: killed", etcdGrace)
	}
	if st := c.cmd.ProcessState; st == nil || !st.Success() {
		t.rec.Eventf("the etcd client ended badly (%v): see etcd-client.log", st)
	}
	n, err := addEtcdOps(t.rec, t.etcdOut)
	if err != nil {
		t.rec.Eventf("reading the etcd client's operations: %v", err)
	}
	t.mu.Lock()
	t.stats["etcd-ops"] += n
	t.mu.Unlock()
}

// addEtcdOps adds the operations in path (one history.Op per line) to
// rec and returns how many it added. A last line cut short (the child
// killed while writing) is left out.
func addEtcdOps(rec *history.Recorder, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		var op history.Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return n, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		op.ID = 0 // the recorder numbers it
		rec.Add(op)
		n++
	}
	return n, sc.Err()
}
