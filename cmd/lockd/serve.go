package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/internal/connlimit"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
)

// serveFlags holds the flags of "lockd serve".
type serveFlags struct {
	id, httpAddr, peerAddr, dataDir string
	logStore                        string
	advertiseHTTP, advertisePeer    string
	initialCluster, join, election  string
	nonVoter                        bool
	voters                          int
	deadVoterAfter                  time.Duration
	heartbeat, electionTO, leaderTO time.Duration
	drift                           float64
	margin                          time.Duration
	maxBlocking                     int
	logLevel, raftLogLevel, logFmt  string
	pprof                           bool
	unsafe                          unsafeFlags // only with the lockd_unsafe tag (unsafe_on.go)
	clusterHTTP                     string
	leaseLog                        string
	tlsCert, tlsKey, clientCA       string
	peerCA, peerCert, peerKey       string
	aclOn                           bool
	aclBootstrapFile, aclTokenFile  string
	rate                            float64
	burst                           int
	maxSessionsPerToken             int
	maxLocksPerSession              int
	maxWaitersPerLock               int
	kvHistoryEvents, kvHistoryMax   int
	kvHistoryAge                    time.Duration
	snapshotThreshold               uint64
	parallelAppend                  setBool
	notifyCommit                    setBool
	snapshotInterval                time.Duration
	bodyTimeout                     time.Duration
	httpConnsPerClient, httpConns   int
	peerConnsPerClient, peerConns   int
	etcdAddr                        string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	d := lease.DefaultConfig()
	fs.StringVar(&f.id, "id", "n1", "this node's unique, stable id")
	fs.StringVar(&f.httpAddr, "http", "127.0.0.1:7400", "HTTP API listen address")
	fs.StringVar(&f.peerAddr, "peer", "127.0.0.1:7401", "peer (Raft) listen address")
	fs.StringVar(&f.etcdAddr, "etcd-listen", "", "serve etcd's v3 gRPC API (docs/etcd.md) on this address, with the HTTP port's TLS, client certificates, ACLs and connection limits; Raft mode only; default off: nothing listens")
	fs.StringVar(&f.dataDir, "data", "./lockd-data", "data directory (Raft log, snapshots)")
	fs.StringVar(&f.logStore, "log-store", d.LogStore, "Raft log store: boltdb, or wal (one fsync per append; a data dir keeps the store it was created with)")
	fs.StringVar(&f.advertiseHTTP, "advertise-http", "", "HTTP URL other nodes forward to and clients follow (default http://<--http>, https:// with --tls-cert)")
	fs.StringVar(&f.advertisePeer, "advertise-peer", "", "peer address other nodes dial (default --peer)")
	fs.StringVar(&f.initialCluster, "initial-cluster", "", "all voters of a new cluster: n1=127.0.0.1:7401,n2=...")
	fs.StringVar(&f.join, "join", "", "HTTP address of any member of an existing cluster to join (host:port means https:// with --tls-cert)")
	fs.BoolVar(&f.nonVoter, "non-voter", false, "with --join: join as a non-voter (replicates the log, serves ?stale reads, never votes; --voters on the leader may promote it)")
	fs.IntVar(&f.voters, "voters", d.Voters, "voters the leader keeps (3 or 5; 0: off, the operator manages the voter set): it replaces a dead voter by a healthy, caught-up non-voter, promotes when short, demotes extras")
	fs.DurationVar(&f.deadVoterAfter, "dead-voter-after", d.DeadVoterAfter, "with --voters: how long a voter must be unreachable from the leader, without a break, before it is replaced")
	fs.StringVar(&f.election, "election", "raft", "how the coordinator is chosen: raft, or for comparison ring, bully, invitation, emergent (unreplicated)")
	fs.StringVar(&f.clusterHTTP, "cluster-http", "", "classic modes, optional: members' HTTP URLs, n1=http://127.0.0.1:7400,...; by default each member tells the others its --advertise-http over the peer port, and a URL given here overrides it")
	fs.DurationVar(&f.heartbeat, "heartbeat-timeout", d.HeartbeatTimeout, "Raft follower timeout; also the master lease unit")
	fs.DurationVar(&f.electionTO, "election-timeout", d.ElectionTimeout, "Raft candidate timeout")
	fs.DurationVar(&f.leaderTO, "leader-lease-timeout", d.LeaderLeaseTimeout, "Raft leader steps down after this long without a quorum")
	fs.Float64Var(&f.drift, "max-clock-drift", d.MaxClockDrift, "largest relative clock-rate difference the master lease tolerates")
	fs.DurationVar(&f.margin, "lease-margin", d.LeaseMargin, "safety margin subtracted from the master lease")
	f.parallelAppend.v = d.ParallelAppend
	f.notifyCommit.v = d.NotifyCommit
	fs.Var(&f.notifyCommit, "raft-notify-commit", "the Raft leader sends its followers each new commit index at once, instead of with the next entries or after 50ms when none come: followers apply a write, and answer the reads and watches they serve, a round trip after it commits; =false: hashicorp/raft's timing")
	fs.Var(&f.parallelAppend, "raft-parallel-append", "the Raft leader sends new entries to its followers while it writes its own log (counting itself only once written), instead of after: one fsync less on each write's path (docs/design.md); =false: after, as hashicorp/raft does")
	fs.Uint64Var(&f.snapshotThreshold, "snapshot-threshold", d.SnapshotThreshold, "log entries since the last snapshot after which Raft snapshots the state (and compacts the log)")
	fs.DurationVar(&f.snapshotInterval, "snapshot-interval", d.SnapshotInterval, "how often Raft checks --snapshot-threshold (at a random time between this and twice this)")
	fs.IntVar(&f.maxBlocking, "max-blocking-queries", d.MaxBlockingQueries,
		"blocking queries (reads with ?wait) this node serves at once; more are answered 429 too_many_requests")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve the HTTP API over HTTPS with this PEM certificate (and --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.clientCA, "client-ca", "", "with --tls-cert: require API clients to present a certificate signed by a CA in this PEM file")
	fs.StringVar(&f.peerCA, "peer-ca", "", "mutual TLS on the peer port: the cluster's CA (PEM); every node's certificate must be signed by it (with --peer-cert, --peer-key)")
	fs.StringVar(&f.peerCert, "peer-cert", "", "this node's peer certificate (PEM), signed by --peer-ca, naming the node id (Common Name or DNS name) and valid for its --advertise-peer host")
	fs.StringVar(&f.peerKey, "peer-key", "", "PEM private key of --peer-cert")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.raftLogLevel, "raft-log-level", "warn", "log level of Raft's own messages")
	fs.StringVar(&f.logFmt, "log-format", "text", "log format: text or json")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's profiles at /debug/pprof/ on the HTTP port (they show the process's internals to anyone who can reach it)")
	fs.BoolVar(&f.aclOn, "acl", false, "turn ACLs on: every request but /healthz and /readyz needs a token (docs/security.md); set it on every node")
	fs.StringVar(&f.aclBootstrapFile, "acl-bootstrap-token-file", "",
		"file holding the secret of the first admin token, created once in the cluster's life (or env LOCKD_ACL_BOOTSTRAP_TOKEN)")
	fs.StringVar(&f.aclTokenFile, "acl-token-file", "",
		"file holding the admin token this node sends when it registers in the cluster (or env LOCKD_AGENT_ACL_TOKEN; default: the bootstrap token). "+
			"LOCKD_ACL_TOKEN is the CLI's own token: serve reads it only with ACLs on and no other token, not even a bootstrap token (deprecated, with a warning)")
	fs.Float64Var(&f.rate, "rate-limit", 20000, "requests per second one client address may send to this node (0: no limit); more are answered 429 with Retry-After")
	fs.IntVar(&f.burst, "rate-burst", 20000, "requests one client address may send at once, above --rate-limit")
	fs.DurationVar(&f.bodyTimeout, "http-body-timeout", httpapi.DefaultBodyTimeout,
		"how long a client may take to send a request's body after its headers; then 408 request_timeout and the connection is closed")
	fs.IntVar(&f.httpConnsPerClient, "http-max-conns-per-client", server.DefaultHTTPConnsPerClient,
		"connections one client address may hold open to the HTTP port (0: no limit); more are answered 429 and closed")
	fs.IntVar(&f.httpConns, "http-max-conns", -1,
		"connections the HTTP port holds open in all (0: no limit; -1: a third of the open-file limit); more are answered 503 overloaded and closed")
	fs.IntVar(&f.peerConnsPerClient, "peer-max-conns-per-client", server.DefaultPeerConnsPerClient,
		"connections one address may hold open to the peer port (0: no limit); more are closed")
	fs.IntVar(&f.peerConns, "peer-max-conns", -1,
		"connections the peer port holds open in all (0: no limit; -1: a third of the open-file limit); more are closed")
	fs.IntVar(&f.maxSessionsPerToken, "max-sessions-per-token", d.MaxSessionsPerToken, "live sessions one ACL token may have")
	fs.IntVar(&f.maxLocksPerSession, "max-locks-per-session", d.MaxObjectsPerSession, "locks and elections one session may hold or wait for")
	fs.IntVar(&f.maxWaitersPerLock, "max-waiters-per-lock", d.MaxWaitersPerObject, "sessions that may wait for one lock or election")
	fs.IntVar(&f.kvHistoryEvents, "kv-history-events", d.KVHistory.MinEvents,
		"events of keys the history keeps at least, for watches (every node must use the same)")
	fs.DurationVar(&f.kvHistoryAge, "kv-history-age", d.KVHistory.MinAge,
		"the history also keeps every event of keys younger than this (every node must use the same)")
	fs.IntVar(&f.kvHistoryMax, "kv-history-max-events", d.KVHistory.MaxEvents,
		"events of keys the history never keeps more of, whatever their age (every node must use the same)")
	fs.StringVar(&f.leaseLog, "lease-log", "",
		"debug aid for the fault harness: append a line to this file at every change of this node's master lease "+
			"(node, term, from, until; both times in nanoseconds of the host's CLOCK_MONOTONIC)")
	f.unsafe.register(fs)
}

// setBool is a boolean flag that knows whether it was given (on the
// command line or from the environment), so that a default can differ from
// what a user asked for.
type setBool struct{ v, set bool }

func (b *setBool) String() string { return strconv.FormatBool(b.v) }

func (b *setBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not true or false")
	}
	b.v, b.set = v, true
	return nil
}

func (b *setBool) IsBoolFlag() bool { return true }

func serve(args []string) int {
	fs := flag.NewFlagSet("lockd serve", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cli.ExitOK
		}
		return cli.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockd serve: unexpected argument %q\n", fs.Arg(0))
		return cli.ExitUsage
	}
	if err := cli.ApplyEnv(fs); err != nil {
		fmt.Fprintf(os.Stderr, "lockd serve: %v\n", err)
		return cli.ExitUsage
	}
	logger, err := f.logger()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockd serve: %v\n", err)
		return cli.ExitUsage
	}
	cfg, err := f.config(logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockd serve: %v\n", err)
		return cli.ExitUsage
	}
	cfg.Version = version
	if cfg.Metrics, err = newMetrics(); err != nil {
		fmt.Fprintf(os.Stderr, "lockd serve: metrics: %v\n", err)
		return cli.ExitError
	}
	srv, err := server.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockd serve: %v\n", err)
		return cli.ExitError
	}
	logger.Info("lockd serving", "id", cfg.Node.ID, "http", srv.HTTPURL(), "peer", srv.PeerAddr(), "etcd", srv.EtcdAddr(),
		"data", cfg.Node.DataDir, "client_certs", cfg.HTTPTLS != nil && cfg.HTTPTLS.ClientCAs != nil,
		"peer_mtls", cfg.PeerTLS != nil, "version", version)
	f.unsafe.warn(logger)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-srv.Node().Removed():
		// Exit 0: a supervisor that restarts on failure leaves it stopped.
		logger.Info("shutting down: this node was removed from the cluster")
	case <-srv.Failed():
		signal.Stop(sig)
		_ = srv.Close()
		fmt.Fprintf(os.Stderr, "lockd serve: %v\n", srv.Err())
		return cli.ExitError
	}
	signal.Stop(sig)
	if err := srv.Close(); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	return cli.ExitOK
}

func (f *serveFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.logFmt {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", f.logFmt)
}

func (f *serveFlags) config(logger *slog.Logger) (server.Config, error) {
	switch f.election {
	case "raft", "ring", "bully", "invitation", "emergent":
	default:
		return server.Config{}, fmt.Errorf("--election %q: use raft, ring, bully, invitation or emergent", f.election)
	}
	tc, err := f.tlsConfigs()
	if err != nil {
		return server.Config{}, err
	}
	scheme := "http://"
	if tc.http != nil {
		scheme = "https://"
	}
	membersHTTP, err := parseClusterHTTP(f.clusterHTTP, scheme)
	if err != nil {
		return server.Config{}, err
	}
	if f.election != "raft" && (f.nonVoter || f.voters != 0) {
		return server.Config{}, fmt.Errorf("--non-voter and --voters are for --election raft: the classic modes have a fixed membership")
	}
	if f.election != "raft" && f.parallelAppend.set && f.parallelAppend.v {
		return server.Config{}, fmt.Errorf("--raft-parallel-append needs --election raft: the classic modes keep no Raft log")
	}
	if f.election != "raft" && f.notifyCommit.set && f.notifyCommit.v {
		return server.Config{}, fmt.Errorf("--raft-notify-commit needs --election raft: the classic modes keep no Raft log")
	}
	if f.election != "raft" && f.etcdAddr != "" {
		return server.Config{}, fmt.Errorf("--etcd-listen needs --election raft: etcd's API is served over the replicated state only")
	}
	if f.election != "raft" && f.initialCluster == "" {
		return server.Config{}, fmt.Errorf("--election %s needs --initial-cluster naming every member", f.election)
	}
	var raftLvl slog.Level
	if err := raftLvl.UnmarshalText([]byte(f.raftLogLevel)); err != nil {
		return server.Config{}, fmt.Errorf("--raft-log-level %q: use debug, info, warn or error", f.raftLogLevel)
	}
	for name, addr := range map[string]string{"--http": f.httpAddr, "--peer": f.peerAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return server.Config{}, fmt.Errorf("%s %q: want host:port", name, addr)
		}
	}
	nc := lease.DefaultConfig()
	nc.ID = f.id
	nc.DataDir = f.dataDir
	nc.LogStore = f.logStore
	nc.PeerAddr = f.advertisePeer
	if nc.PeerAddr == "" {
		nc.PeerAddr = f.peerAddr
	}
	switch {
	case f.advertiseHTTP == "":
		nc.HTTPAddr = scheme + f.httpAddr
	case !strings.Contains(f.advertiseHTTP, "://"):
		nc.HTTPAddr = scheme + f.advertiseHTTP
	case tc.http != nil && !strings.HasPrefix(f.advertiseHTTP, "https://"):
		return server.Config{}, fmt.Errorf("--advertise-http %q: the API serves HTTPS (--tls-cert): advertise an https:// URL", f.advertiseHTTP)
	default:
		nc.HTTPAddr = f.advertiseHTTP
	}
	nc.Join = f.join
	nc.NonVoter, nc.Voters, nc.DeadVoterAfter = f.nonVoter, f.voters, f.deadVoterAfter
	nc.HeartbeatTimeout, nc.ElectionTimeout, nc.LeaderLeaseTimeout = f.heartbeat, f.electionTO, f.leaderTO
	nc.MaxClockDrift, nc.LeaseMargin = f.drift, f.margin
	nc.MaxBlockingQueries = f.maxBlocking
	if f.snapshotThreshold < 1 || f.snapshotInterval < 5*time.Millisecond {
		return server.Config{}, fmt.Errorf("--snapshot-threshold %d must be at least 1 and --snapshot-interval %v at least 5ms", f.snapshotThreshold, f.snapshotInterval)
	}
	nc.SnapshotThreshold, nc.SnapshotInterval = f.snapshotThreshold, f.snapshotInterval
	nc.ParallelAppend = f.parallelAppend.v
	nc.NotifyCommit = f.notifyCommit.v
	nc.MaxSessionsPerToken, nc.MaxObjectsPerSession, nc.MaxWaitersPerObject = f.maxSessionsPerToken, f.maxLocksPerSession, f.maxWaitersPerLock
	if f.kvHistoryEvents < 0 || f.kvHistoryAge < 0 || f.kvHistoryMax < 1 || f.kvHistoryEvents > f.kvHistoryMax {
		return server.Config{}, fmt.Errorf("--kv-history-events %d and --kv-history-age %v must not be negative, and --kv-history-max-events %d must be at least 1 and at least --kv-history-events",
			f.kvHistoryEvents, f.kvHistoryAge, f.kvHistoryMax)
	}
	nc.KVHistory = fsm.HistoryLimits{MinEvents: f.kvHistoryEvents, MinAge: f.kvHistoryAge, MaxEvents: f.kvHistoryMax}
	if f.rate < 0 || f.burst < 1 {
		return server.Config{}, fmt.Errorf("--rate-limit %g must not be negative and --rate-burst %d must be at least 1", f.rate, f.burst)
	}
	httpConns, peerConns, err := f.connLimits()
	if err != nil {
		return server.Config{}, err
	}
	nc.RaftLogLevel = raftLvl
	nc.Logger = logger
	nc.LeaseLog = f.leaseLog
	peers, err := parseInitialCluster(f.initialCluster)
	if err != nil {
		return server.Config{}, err
	}
	nc.InitialCluster = peers
	if err := f.unsafe.apply(&nc); err != nil {
		return server.Config{}, err
	}
	boot, err := secretFrom("--acl-bootstrap-token-file", f.aclBootstrapFile, "LOCKD_ACL_BOOTSTRAP_TOKEN")
	if err != nil {
		return server.Config{}, err
	}
	own, err := f.agentToken(logger, boot != "")
	if err != nil {
		return server.Config{}, err
	}
	if !f.aclOn && boot != "" {
		return server.Config{}, errors.New("a bootstrap ACL token is given but --acl is off: turn ACLs on, or give no bootstrap token")
	}
	nc.ACLBootstrapSecret = boot
	if err := nc.Validate(); err != nil {
		return server.Config{}, errors.New(strings.TrimPrefix(err.Error(), "lease: config: "))
	}
	return server.Config{Node: nc, HTTPListen: f.httpAddr, PeerListen: f.peerAddr,
		UnsafeFaults: f.unsafe.faultsOn(), Pprof: f.pprof, Logger: logger, Election: f.election, MembersHTTP: membersHTTP,
		HTTPTLS: tc.http, PeerTLS: tc.peer, APIClientTLS: tc.apiClient,
		ACL: f.aclOn, ACLToken: own, RateLimit: httpapi.RateLimit{Rate: f.rate, Burst: f.burst},
		HTTPConns: httpConns, PeerConns: peerConns, HTTPBodyTimeout: f.bodyTimeout, EtcdListen: f.etcdAddr}, nil
}

// connLimits checks the connection-limit flags and fills in their
// defaults: -1 for a total is a third of the open-file limit.
func (f *serveFlags) connLimits() (api, peer connlimit.Limits, err error) {
	if f.bodyTimeout <= 0 {
		return api, peer, fmt.Errorf("--http-body-timeout %v must be positive", f.bodyTimeout)
	}
	for _, v := range []struct {
		name string
		n    int
		min  int
	}{{"--http-max-conns-per-client", f.httpConnsPerClient, 0}, {"--http-max-conns", f.httpConns, -1},
		{"--peer-max-conns-per-client", f.peerConnsPerClient, 0}, {"--peer-max-conns", f.peerConns, -1}} {
		if v.n < v.min {
			return api, peer, fmt.Errorf("%s %d must be at least %d", v.name, v.n, v.min)
		}
	}
	total := func(n int) int {
		if n >= 0 {
			return n
		}
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
			return server.DefaultTotalConns(1024)
		}
		return server.DefaultTotalConns(rl.Cur)
	}
	api = connlimit.Limits{PerClient: f.httpConnsPerClient, Total: total(f.httpConns)}
	peer = connlimit.Limits{PerClient: f.peerConnsPerClient, Total: total(f.peerConns)}
	return api, peer, nil
}

// tlsSet holds the TLS configurations of a node; nil for what is off.
type tlsSet struct {
	http, peer, apiClient *tls.Config
}

// tlsConfigs loads the TLS configurations the flags ask for: HTTPS for the
// API with --tls-cert and --tls-key (client certificates with --client-ca),
// mutual TLS on the peer port with --peer-ca, --peer-cert and --peer-key,
// and, with either, what the node calls other nodes' APIs with.
func (f *serveFlags) tlsConfigs() (tlsSet, error) {
	var tc tlsSet
	var err error
	var offered []tls.Certificate
	if f.peerCA != "" || f.peerCert != "" || f.peerKey != "" {
		if tc.peer, err = certs.PeerTLS(f.peerCA, f.peerCert, f.peerKey); err != nil {
			return tlsSet{}, err
		}
		offered = append(offered, tc.peer.Certificates...)
	}
	switch {
	case f.tlsCert != "" || f.tlsKey != "":
		if tc.http, err = certs.ServerTLS(f.tlsCert, f.tlsKey, f.clientCA); err != nil {
			return tlsSet{}, err
		}
		offered = append(offered, tc.http.Certificates...)
	case f.clientCA != "":
		return tlsSet{}, errors.New("--client-ca needs --tls-cert and --tls-key")
	}
	if tc.http != nil || tc.peer != nil {
		if tc.apiClient, err = certs.NodeClientTLS([]string{f.peerCA, f.clientCA}, offered); err != nil {
			return tlsSet{}, err
		}
	}
	return tc, nil
}

// parseInitialCluster parses "n1=127.0.0.1:7401,n2=127.0.0.1:7411".
func parseInitialCluster(s string) ([]lease.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var out []lease.Peer
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--initial-cluster: %q is not id=host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--initial-cluster: %q: want host:port after %s=", addr, id)
		}
		out = append(out, lease.Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// parseClusterHTTP parses "n1=http://127.0.0.1:7400,n2=127.0.0.1:7410";
// an address without a scheme gets scheme ("http://" or "https://").
func parseClusterHTTP(s, scheme string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--cluster-http: %q is not id=url", part)
		}
		if !strings.Contains(addr, "://") {
			addr = scheme + addr
		}
		out[id] = addr
	}
	return out, nil
}

// agentToken returns the token the node sends with its own requests:
// --acl-token-file, else LOCKD_AGENT_ACL_TOKEN, else "" (the bootstrap
// token, when the node has one). LOCKD_ACL_TOKEN is what a CLI user
// exports for the client commands; serve read it in place of
// LOCKD_AGENT_ACL_TOKEN before the two were told apart. It still does,
// with ACLs on and a deprecation warning, only when none of the others
// gives the node a token: a node with a bootstrap token ignores it (with
// a warning, since it used to override the bootstrap token). With ACLs
// off it is never read: a CLI user's token has no business changing a
// node.
func (f *serveFlags) agentToken(logger *slog.Logger, hasBootstrap bool) (string, error) {
	own, err := secretFrom("--acl-token-file", f.aclTokenFile, agentTokenEnv)
	if err != nil || own != "" || !f.aclOn || os.Getenv(cliTokenEnv) == "" {
		return own, err
	}
	if hasBootstrap {
		logger.Warn(cliTokenEnv + " is set but lockd serve does not use it: it is the client commands' token; " +
			"this node sends its bootstrap token (set " + agentTokenEnv + " or --acl-token-file to give it another)")
		return "", nil
	}
	own, err = secretFrom("--acl-token-file", "", cliTokenEnv)
	if err != nil {
		return "", err
	}
	logger.Warn("deprecated: lockd serve takes its own ACL token from " + cliTokenEnv + ", the variable the client commands send; " +
		"set " + agentTokenEnv + " or --acl-token-file instead (a later version will ignore " + cliTokenEnv + " here)")
	return own, nil
}

// The variables of the node's own ACL token and of the CLI's.
const (
	agentTokenEnv = "LOCKD_AGENT_ACL_TOKEN" //nolint:gosec // G101: the name of a variable that carries a token, not a token
	cliTokenEnv   = "LOCKD_ACL_TOKEN"       //nolint:gosec // G101: likewise
)

// secretFrom reads an ACL secret from file (trailing white space dropped),
// or else from the environment variable env; "" when neither is set.
func secretFrom(flagName, file, env string) (string, error) {
	s := os.Getenv(env)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		s = strings.TrimSpace(string(b))
	}
	if s == "" {
		return "", nil
	}
	if err := acl.ValidateSecret(s); err != nil {
		return "", fmt.Errorf("%s (or %s): %w", flagName, env, err)
	}
	return s, nil
}
