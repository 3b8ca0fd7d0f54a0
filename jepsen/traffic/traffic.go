// Package traffic is the harness's client workloads: lock operations on a
// few lock names (exclusive and shared holders, blocking acquires that
// queue, sessions abandoned inside a lock-delay), a fenced resource
// written by lock holders (some of them child processes the harness can
// SIGSTOP), elections, and session expiry under load. Workers use the lockd client library, record every operation
// in a history.Recorder, and stop by themselves when their context ends;
// every call carries a deadline.
//
// Traffic does not judge what it sees; package validate does.
package traffic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/ctxsleep"
	"github.com/lockd/lockd/jepsen/history"
)

// Workload names, as the --workloads flag takes them.
const (
	Locks     = "locks"
	Fenced    = "fenced"
	Elections = "elections"
	Expiry    = "expiry"
	// Namespace is the namespace workload (kv.go): registers, request
	// numbers, fenced writes, ephemeral keys and watches.
	Namespace = "kv"
	// Etcd is the etcd-client workload (etcd.go): etcd's client and its
	// Mutex and Election recipes against the nodes' etcd ports, in a
	// child process. Raft mode only.
	Etcd = "etcd"
	// PlainLocks is Locks without the workers of shared locks, queues,
	// lock-delays and request numbers: only try-locks, checks, releases
	// and reads, all of which the gate holds back, so that nothing writes
	// while the lease schedule quiets the log (lock-delays and abandoned
	// sessions end through entries the leader writes itself). Not in All.
	PlainLocks = "plain-locks"
)

// All lists every workload of a campaign.
var All = []string{Locks, Fenced, Elections, Expiry, Namespace, Etcd}

// Select parses a comma-separated list of workload names, or "all". A run
// without a workload would check nothing, so an empty list is an error, as
// is an unknown name.
func Select(list string) ([]string, error) {
	if strings.TrimSpace(list) == "all" {
		return slices.Clone(All), nil
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(All, n) && n != PlainLocks {
			return nil, fmt.Errorf("traffic: unknown workload %q (known: all, %s, %s)", n, strings.Join(All, ", "), PlainLocks)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Config configures the workloads of one run.
type Config struct {
	// Endpoints are the HTTP base URLs of every node.
	Endpoints []string
	// NodeIDs names each endpoint, in the same order.
	NodeIDs []string
	// Recorder receives the history.
	Recorder *history.Recorder
	// Seed drives every random choice of the workers.
	Seed uint64
	// TTL is the TTL of the workers' sessions.
	TTL time.Duration
	// MaxClockDrift is the nodes' --max-clock-drift (0 for lockd's default,
	// negative for 0): a leader's clock may run that much fast, so a
	// session's TTL promises that much less real time.
	MaxClockDrift float64
	// Workloads to run (names above).
	Workloads []string
	// NoFencing turns the fenced resource's token check off (negative
	// control: the resource then accepts stale writes).
	NoFencing bool
	// Binary and Env start the child fence clients (see RunFenceClient).
	Binary string
	Env    []string
	// LogDir receives the child clients' logs.
	LogDir string
	// Proc reports the process (pid) of the node at an endpoint's index,
	// 0 when none runs; nil for unknown.
	Proc func(node int) int
	// TLS, when set, is the clients' TLS configuration for nodes that
	// serve HTTPS and ask for client certificates; CAFile, CertFile and
	// KeyFile are the same files, for the child fence clients.
	TLS                       *tls.Config
	CAFile, CertFile, KeyFile string
	// NewToken, when set, creates a token with rules (never an admin
	// token) on a cluster with ACLs on and returns its secret; the
	// workloads then speak with tokens of their own (see access.go).
	NewToken func(ctx context.Context, description string, rules []acl.Rule) (string, error)
	// EtcdEndpoints are the host:port of every node's etcd port, and
	// EtcdClient the built etcd client child (BuildEtcdClient), for the
	// etcd workload.
	EtcdEndpoints []string
	EtcdClient    string
}

// LockNames are the locks the lock workload uses.
var LockNames = []string{"jepsen/l0", "jepsen/l1", "jepsen/l2"}

// ElectionName is the election the election workload uses.
const ElectionName = "jepsen/e0"

// Traffic runs the configured workloads.
type Traffic struct {
	cfg    Config
	rec    *history.Recorder
	wg     sync.WaitGroup
	fence  *Resource
	gate   *Gate
	mu     sync.Mutex
	client int
	stats  map[string]int
	queued map[string]bool // sessions a read saw queued (waiters.go)
	// shared is, per token, the client the next worker of that token
	// shares with the one before it (session.go).
	shared map[string]*sharedClient
	// retries are the request-number worker's requests (retries.go).
	retries []Retry
	// base carries every request of the workers' own HTTP clients
	// (baseTransport); lockToken and electionToken are the workloads'
	// tokens with ACLs on (access.go).
	base                     http.RoundTripper
	lockToken, electionToken string
	// kvToken is the namespace workload's token; kvl what it saw (kv.go).
	kvToken string
	kvl     kvLog
	// etcd is the etcd client child, writing its operations to etcdOut
	// until etcdDeadline (etcd.go).
	etcd         *Child
	etcdOut      string
	etcdDeadline time.Time
}

// New returns a Traffic. It does no I/O.
func New(cfg Config) *Traffic {
	return &Traffic{cfg: cfg, rec: cfg.Recorder, stats: map[string]int{}, shared: map[string]*sharedClient{},
		gate: &Gate{}, base: baseTransport(cfg.TLS)}
}

// Writes is the gate every write of the in-process workers passes.
func (t *Traffic) Writes() *Gate { return t.gate }

func (t *Traffic) has(w string) bool {
	for _, x := range t.cfg.Workloads {
		if x == w {
			return true
		}
	}
	return false
}

// nextClient numbers workers for the visualization.
func (t *Traffic) nextClient() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.client++
	return t.client - 1
}

func (t *Traffic) count(what string) {
	t.mu.Lock()
	t.stats[what]++
	t.mu.Unlock()
}

// Stats returns how many operations of each kind the workers invoked.
func (t *Traffic) Stats() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for k, v := range t.stats {
		out[k] = v
	}
	return out
}

// Resource returns the fenced resource, or nil when the fenced workload
// does not run.
func (t *Traffic) Resource() *Resource { return t.fence }

// Start makes the workloads' tokens on a cluster with ACLs, and starts
// every configured workload; they stop when ctx ends. Wait waits for them.
func (t *Traffic) Start(ctx context.Context) error {
	if err := t.makeTokens(ctx); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(t.cfg.Seed, 0x7a11))
	if t.has(Locks) || t.has(PlainLocks) {
		for i := range 4 {
			t.spawnRand(rng, i, func(r *rand.Rand) { t.lockWorker(ctx, r) })
		}
		for i := range t.cfg.Endpoints {
			t.spawnRand(rng, i, func(r *rand.Rand) { t.reader(ctx, i, r) })
			t.spawnRand(rng, i, func(r *rand.Rand) { t.nodeReader(ctx, i, r) })
		}
		if t.has(Locks) {
			t.startLockGuarantees(ctx, rng)
		}
	}
	if t.has(Elections) {
		for i := range 2 {
			t.spawnRand(rng, i, func(r *rand.Rand) { t.electionWorker(ctx, r) })
		}
		t.spawn(func() { t.electionReader(ctx) })
	}
	if t.has(Expiry) {
		t.spawnRand(rng, 9, func(r *rand.Rand) { t.expiryWorker(ctx, r) })
	}
	if t.has(Fenced) {
		r, err := NewResource(!t.cfg.NoFencing, t.rec)
		if err != nil {
			return err
		}
		t.fence = r
		for i := range 2 {
			token, err := t.cfg.newToken(ctx, fmt.Sprintf("jepsen fenced worker %d", i), fencedRules)
			if err != nil {
				return err
			}
			t.spawnRand(rng, i, func(r *rand.Rand) { t.fencedWorker(ctx, token, r) })
		}
		if err := r.StartChildren(ctx, t.cfg, 2); err != nil {
			return err
		}
	}
	if t.has(Namespace) {
		if err := t.startKV(ctx, rng); err != nil {
			return err
		}
	}
	if t.has(Etcd) {
		if err := t.startEtcdClient(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startLockGuarantees starts the workers of shared locks (SharedLock),
// blocking acquires with hand-offs (QueueLock), lock-delays (DelayLocks)
// and repeated requests (RetryLock).
func (t *Traffic) startLockGuarantees(ctx context.Context, rng *rand.Rand) {
	for i := range 2 {
		t.spawnRand(rng, i, func(r *rand.Rand) { t.sharedWorker(ctx, r) })
	}
	for i := range 3 {
		t.spawnRand(rng, i, func(r *rand.Rand) { t.queueWorker(ctx, r) })
	}
	t.spawnRand(rng, 11, func(r *rand.Rand) { t.queueReader(ctx, r) })
	t.spawnRand(rng, 12, func(r *rand.Rand) { t.delayAbandoner(ctx, r) })
	t.spawnRand(rng, 13, func(r *rand.Rand) { t.retryWorker(ctx, r) })
	for i := range 2 {
		t.spawnRand(rng, i, func(r *rand.Rand) { t.delayContender(ctx, r) })
	}
}

func (t *Traffic) spawn(f func()) {
	t.wg.Add(1)
	go func() { defer t.wg.Done(); f() }()
}

// spawnRand runs f in a goroutine of its own, like spawn, with a generator
// of its own for stream. The seed is drawn from rng here, before the
// goroutine starts: a rand.Rand is not safe for concurrent use, and seeds
// drawn by the workers themselves would depend on the order they ran in.
func (t *Traffic) spawnRand(rng *rand.Rand, stream int, f func(*rand.Rand)) {
	r := rand.New(rand.NewPCG(rng.Uint64(), uint64(stream))) //nolint:gosec // G115: streams number workers from 0
	t.spawn(func() { f(r) })
}

// Wait waits for every worker and child client to stop, and closes the
// resource's server.
func (t *Traffic) Wait() {
	t.wg.Wait()
	t.waitEtcdClient()
	if t.fence != nil {
		t.fence.Close()
	}
	if tr, ok := t.base.(*http.Transport); ok && t.base != http.DefaultTransport {
		tr.CloseIdleConnections()
	}
}

// newClient returns a client for the endpoints that speaks with token and
// passes the gate, starting at a different endpoint per worker so that
// requests land on every node.
func (t *Traffic) newClient(first int, token string) *client.Client {
	eps := append([]string(nil), t.cfg.Endpoints[first%len(t.cfg.Endpoints):]...)
	eps = append(eps, t.cfg.Endpoints[:first%len(t.cfg.Endpoints)]...)
	c, err := client.NewWithConfig(client.Config{Endpoints: eps, HTTPClient: t.gated(token), TLS: t.cfg.TLS,
		RequestTimeout: time.Second, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		panic(err) // the endpoints are ours and well formed
	}
	return c
}

// status classifies a call's error: nil is OK; an API error that says the
// request was refused is Fail; anything else (timeouts, lost connections,
// no leader after retries, a cancelled context) is Unknown.
func status(err error) (history.Status, string) {
	if err == nil {
		return history.OK, ""
	}
	code := api.CodeOf(err)
	switch code {
	case api.CodeLockHeld, api.CodeNotHolder, api.CodeLockDelay, api.CodeSessionExpired, api.CodeBadRequest,
		api.CodeRepeated:
		return history.Fail, code
	}
	if errors.Is(err, client.ErrSessionLost) {
		// Callers check the session before invoking, so a loss reported
		// now may have come after the server acted.
		return history.Unknown, "session_lost"
	}
	return history.Unknown, code
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool { return ctxsleep.Sleep(ctx, d) == nil }

func jitter(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	return s
}
