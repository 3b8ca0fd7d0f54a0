package proccluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/test/testnet"
)

// Config describes a cluster to start.
type Config struct {
	// Binary is the path of a built lockd.
	Binary string
	// Nodes is the cluster size (3 or 5).
	Nodes int
	// Voters, if set, is how many of the Nodes form the initial cluster
	// (n1..nVoters, in --initial-cluster); Start starts only those, and
	// the others are spares to start with StartJoin. 0 means all.
	Voters int
	// NonVoters, with Voters, is how many of the nodes after the initial
	// voters (n(Voters+1)...) start as non-voters: Start starts them with
	// --join (through n1) and --non-voter, and every later start of theirs
	// uses the same flags. The rest of the nodes stay spares.
	NonVoters int
	// KeepVoters and DeadVoterAfter, if set, are every node's --voters and
	// --dead-voter-after: the leader's voter-set maintenance.
	KeepVoters     int
	DeadVoterAfter time.Duration
	// Dir holds each node's data directory and log.
	Dir string
	// Election is passed to "lockd serve --election" ("raft" if empty).
	Election string
	// UnsafeDebug is passed to "lockd serve --unsafe-debug" when not empty.
	UnsafeDebug string
	// Extra are more arguments for every "lockd serve".
	Extra []string
	// Plain starts the nodes as an operator would, without the harness's
	// aids (--unsafe-fault-injection and --lease-log): for measurements.
	Plain bool
	// TLS secures the cluster: New makes a CA and certificates in
	// Dir/tls (lockd tls init's), and every node serves its API over
	// HTTPS, requiring client certificates (--tls-cert, --tls-key,
	// --client-ca), and speaks mutual TLS on its peer port (--peer-ca,
	// --peer-cert, --peer-key). Node.HTTP is then https://, and the
	// cluster's own calls (Node.Do and what is built on it) present the
	// client certificate and trust only that CA; ClientTLS gives the same
	// to other clients.
	TLS bool
	// ACL turns ACLs on: New writes a random bootstrap secret to
	// Dir/acl-bootstrap.token (mode 0600), every node starts with --acl
	// and --acl-bootstrap-token-file (a node that joins later registers
	// with that token too), and the cluster's own calls (Node.Do and what
	// is built on it: status, fault rules, clocks, members) send it as the
	// admin token. AdminToken returns it; CreateToken makes other tokens.
	ACL bool
	// DiskSize, if set ("256m"), gives every node's data dir a disk of
	// its own: a tmpfs of that size mounted by New (as root), which
	// Node.FillDisk fills and Node.FreeDisk frees; Unmount removes them.
	DiskSize string
	// Etcd has every node serve etcd's v3 API too (--etcd-listen) on a
	// port of its own, Node.Etcd. Raft mode only.
	Etcd bool
}

// Node is one lockd process. Its methods are safe for concurrent use.
type Node struct {
	ID   string
	HTTP string // base URL, http://127.a.b.x:port (https:// with Config.TLS)
	Peer string // host:port
	// Etcd is the host:port of its etcd API (Config.Etcd), else "".
	Etcd string
	// IP is the loopback address the node listens on: 127.a.b.2 for n1,
	// 127.a.b.3 for n2, ... (a.b from the harness's pid), or 127.0.0.1 for
	// all where the machine has no other loopback address. The harness's
	// own clients use 127.0.0.1.
	IP      string
	DataDir string
	LogPath string
	// LeaseLogPath is the node's lease log (lockd serve --lease-log),
	// beside its log: every process of the node appends to it, and wiping
	// the data leaves it.
	LeaseLogPath string
	args         []string
	hc           *http.Client // for Do
	token        string       // Config.ACL: the admin token Do sends
	mu           sync.Mutex
	cmd          *exec.Cmd
	done         chan struct{}
	paused       bool
	restarts     int
	disk         bool // the data dir is a tmpfs of its own (Config.DiskSize)
}

// Cluster is a set of lockd processes started by this package.
type Cluster struct {
	cfg        Config
	Nodes      []*Node
	tlsDir     string      // Config.TLS: the certificates
	clientTLS  *tls.Config // Config.TLS: what the harness's clients use
	adminToken string      // Config.ACL: the bootstrap token's secret
	tokenFile  string      // Config.ACL: the file that holds it
}

// UnsafeTag is the build tag that compiles the unsafe switches into lockd:
// the flags --unsafe-fault-injection and --unsafe-debug, which a default
// build does not have.
const UnsafeTag = "lockd_unsafe"

// Build compiles cmd/lockd into dir with UnsafeTag, as the harness needs
// it (New's nodes run with --unsafe-fault-injection unless Plain, and
// Config.UnsafeDebug), and returns the binary's path.
func Build(dir string) (string, error) { return BuildTags(dir, UnsafeTag) }

// BuildTags compiles cmd/lockd into dir with the given build tags (none:
// the production build, which only a Plain cluster can run) and returns
// the binary's path.
func BuildTags(dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "lockd")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	out, err := exec.Command("go", append(args, "github.com/lockd/lockd/cmd/lockd")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cluster: go build: %w\n%s", err, out)
	}
	return bin, nil
}

// nodeIP returns the loopback address of the i-th node (from 0): its own
// 127.a.b.(i+2), where the machine routes 127.0.0.0/8 to the loopback
// device (Linux does), so that packet filters can cut links between nodes;
// else 127.0.0.1. a.b comes from the process id, so that the clusters of
// harnesses running side by side have addresses, and filter rules, of
// their own; it is never 0.0, the harness's own 127.0.0.1.
func nodeIP(i int) string {
	pid := os.Getpid()
	ip := fmt.Sprintf("127.%d.%d.%d", 1+pid%254, pid/254%256, i+2)
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return "127.0.0.1"
	}
	ln.Close()
	return ip
}

// New prepares a cluster: ports and directories, no processes yet.
func New(cfg Config) (*Cluster, error) {
	if cfg.Nodes < 1 {
		return nil, errors.New("cluster: need at least one node")
	}
	c := &Cluster{cfg: cfg}
	scheme, hc := "http://", defaultHTTPClient
	var initial, httpList []string
	peers, https, etcds := make([]string, cfg.Nodes), make([]string, cfg.Nodes), make([]string, cfg.Nodes)
	ips := make([]string, cfg.Nodes)
	for i := range peers {
		ips[i] = nodeIP(i)
		addrs, err := testnet.Ports(ips[i], 3)
		if err != nil {
			return nil, err
		}
		peers[i], https[i] = addrs[0], addrs[1]
		if cfg.Etcd {
			etcds[i] = addrs[2]
		}
	}
	if cfg.TLS {
		var err error
		if hc, err = c.makeCerts(ips); err != nil {
			return nil, err
		}
		scheme = "https://"
	}
	if cfg.ACL {
		if err := c.makeBootstrapToken(); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Nodes {
		if cfg.Voters == 0 || i < cfg.Voters {
			initial = append(initial, fmt.Sprintf("n%d=%s", i+1, peers[i]))
		}
		httpList = append(httpList, fmt.Sprintf("n%d=%s%s", i+1, scheme, https[i]))
	}
	for i := range cfg.Nodes {
		id := fmt.Sprintf("n%d", i+1)
		h := https[i]
		n := &Node{ID: id, HTTP: scheme + h, Peer: peers[i], Etcd: etcds[i], IP: ips[i], DataDir: filepath.Join(cfg.Dir, id),
			LogPath: filepath.Join(cfg.Dir, id+".log"), LeaseLogPath: filepath.Join(cfg.Dir, id+".lease"), hc: hc, token: c.adminToken}
		n.args = []string{"serve", "--id", id, "--http", h, "--peer", peers[i], "--data", n.DataDir,
			"--initial-cluster", strings.Join(initial, ",")}
		if cfg.Voters > 0 && i >= cfg.Voters && i < cfg.Voters+cfg.NonVoters {
			n.args = []string{"serve", "--id", id, "--http", h, "--peer", peers[i], "--data", n.DataDir,
				"--join", scheme + https[0], "--non-voter"}
		}
		if cfg.KeepVoters > 0 {
			n.args = append(n.args, "--voters", fmt.Sprint(cfg.KeepVoters))
		}
		if cfg.DeadVoterAfter > 0 {
			n.args = append(n.args, "--dead-voter-after", cfg.DeadVoterAfter.String())
		}
		if cfg.TLS {
			n.args = append(n.args, c.tlsArgs(id)...)
		}
		if cfg.ACL {
			n.args = append(n.args, "--acl", "--acl-bootstrap-token-file", c.tokenFile)
		}
		if !cfg.Plain {
			n.args = append(n.args, "--unsafe-fault-injection", "--lease-log", n.LeaseLogPath)
		}
		if cfg.Election != "" && cfg.Election != "raft" {
			// The classic modes keep no member table: every node needs the
			// others' HTTP addresses to forward to the coordinator.
			n.args = append(n.args, "--election", cfg.Election, "--cluster-http", strings.Join(httpList, ","))
		}
		if cfg.UnsafeDebug != "" {
			n.args = append(n.args, "--unsafe-debug", cfg.UnsafeDebug)
		}
		if cfg.Etcd {
			n.args = append(n.args, "--etcd-listen", etcds[i])
		}
		n.args = append(n.args, cfg.Extra...)
		c.Nodes = append(c.Nodes, n)
	}
	if cfg.DiskSize != "" {
		if err := c.mountDisks(); err != nil {
			c.Unmount()
			return nil, err
		}
	}
	return c, nil
}

// makeCerts makes the CA and certificates of a TLS cluster, every node's
// valid for every node's address (and 127.0.0.1, localhost), and returns
// the HTTP client of the harness's own calls.
func (c *Cluster) makeCerts(ips []string) (*http.Client, error) {
	c.tlsDir = filepath.Join(c.cfg.Dir, "tls")
	ids := make([]string, len(ips))
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	hosts := append([]string{"127.0.0.1", "localhost"}, ips...)
	if _, err := certs.Init(c.tlsDir, ids, hosts); err != nil {
		return nil, fmt.Errorf("cluster: certificates: %w", err)
	}
	var err error
	c.clientTLS, err = certs.ClientTLS(c.TLSFile(certs.CAFile), c.TLSFile(certs.ClientFile), c.TLSFile(certs.ClientKeyFile))
	if err != nil {
		return nil, fmt.Errorf("cluster: certificates: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c.clientTLS.Clone() // net/http writes into it; callers of ClientTLS share c.clientTLS
	return &http.Client{Timeout: defaultHTTPClient.Timeout, Transport: tr}, nil
}

// tlsArgs returns the TLS flags of node id's "lockd serve".
func (c *Cluster) tlsArgs(id string) []string {
	cert, key := certs.NodeFiles(id)
	cert, key, ca := c.TLSFile(cert), c.TLSFile(key), c.TLSFile(certs.CAFile)
	return []string{"--tls-cert", cert, "--tls-key", key, "--client-ca", ca,
		"--peer-ca", ca, "--peer-cert", cert, "--peer-key", key}
}

// TLSFile returns the path of one of a TLS cluster's certificate files
// (certs.CAFile, certs.ClientFile, ...), or "" without Config.TLS.
func (c *Cluster) TLSFile(name string) string {
	if c.tlsDir == "" {
		return ""
	}
	return filepath.Join(c.tlsDir, name)
}

// makeBootstrapToken writes the bootstrap admin token of a cluster with
// ACLs: 32 random bytes in hex, in a file only its owner may read.
func (c *Cluster) makeBootstrapToken() error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	c.adminToken = hex.EncodeToString(b)
	c.tokenFile = filepath.Join(c.cfg.Dir, "acl-bootstrap.token")
	if err := os.MkdirAll(c.cfg.Dir, 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(c.tokenFile, []byte(c.adminToken+"\n"), 0o600); err != nil {
		return fmt.Errorf("cluster: bootstrap token: %w", err)
	}
	return nil
}

// AdminToken returns the secret of the bootstrap admin token of a cluster
// with ACLs, or "" without Config.ACL.
func (c *Cluster) AdminToken() string { return c.adminToken }

// ClientTLS returns the TLS configuration of a client of a TLS cluster
// (its CA, the client certificate), or nil without Config.TLS.
func (c *Cluster) ClientTLS() *tls.Config { return c.clientTLS }

// Start starts every node (with Config.Voters, the initial voters and
// Config.NonVoters non-voters).
func (c *Cluster) Start() error {
	for i, n := range c.Nodes {
		if c.cfg.Voters > 0 && i >= c.cfg.Voters+c.cfg.NonVoters {
			break
		}
		if err := n.Start(c.cfg.Binary); err != nil {
			return err
		}
	}
	return nil
}

// Endpoints returns every node's HTTP base URL.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.HTTP)
	}
	return out
}

// Node returns the node with the given id, or nil.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Close kills every node's process group and waits for them. It is safe to
// call more than once and from a deferred call after a panic.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// Start starts the node's process with bin in a new process group.
func (n *Node) Start(bin string) error { return n.start(bin, n.args) }

// StartJoin starts the node, which has no data, as a new member that joins
// the cluster through the node at via (an HTTP base URL) instead of
// bootstrapping it. Later starts are plain ones: the node has data then.
func (n *Node) StartJoin(bin, via string) error {
	return n.start(bin, append(n.joinArgs(), "--join", via))
}

// StartJoinNonVoter starts the node, which has no data, as a new
// non-voter that joins through the node at via. Later starts are plain
// ones.
func (n *Node) StartJoinNonVoter(bin, via string) error {
	return n.start(bin, append(n.joinArgs(), "--join", via, "--non-voter"))
}

// joinArgs are the node's arguments without --initial-cluster, --join and
// --non-voter.
func (n *Node) joinArgs() []string {
	var args []string
	for i := 0; i < len(n.args); i++ {
		switch n.args[i] {
		case "--initial-cluster", "--join":
			i++ // and its value
			continue
		case "--non-voter":
			continue
		}
		args = append(args, n.args[i])
	}
	return args
}

func (n *Node) start(bin string, args []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.aliveLocked() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(n.LogPath), 0o750); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== harness: start %s %s\n", n.ID, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("cluster: start %s: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }() // how it ended shows in cmd.ProcessState
	n.cmd, n.done, n.paused = cmd, done, false
	n.restarts++
	return nil
}

func (n *Node) aliveLocked() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Exited reports whether the node's last process has ended, and then its
// exit code (-1 if a signal ended it).
func (n *Node) Exited() (code int, exited bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.aliveLocked() {
		return 0, false
	}
	return n.cmd.ProcessState.ExitCode(), true
}

// Alive reports whether the node's process is running (or stopped).
func (n *Node) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.aliveLocked()
}

// Paused reports whether the harness has stopped the node with SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused && n.aliveLocked()
}

// PID returns the process id, or 0 when the node is down.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.aliveLocked() {
		return 0
	}
	return n.cmd.Process.Pid
}

// Kill sends SIGKILL to the node's process group and waits until the
// process is reaped (at most 10 s).
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	alive := n.aliveLocked()
	n.paused = false
	n.mu.Unlock()
	if !alive {
		return
	}
	pid := cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(-pid, syscall.SIGCONT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// Wipe kills the node if it runs and deletes its data directory: the node
// has lost its disk.
func (n *Node) Wipe() error {
	n.Kill()
	if n.Alive() {
		return fmt.Errorf("cluster: %s did not die; its data is kept", n.ID)
	}
	if n.disk { // a mount point: empty it, keep it
		ents, err := os.ReadDir(n.DataDir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(n.DataDir, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	return os.RemoveAll(n.DataDir)
}

// Restart kills the node if it runs and starts it again on the same data.
func (n *Node) Restart(bin string) error {
	n.Kill()
	return n.Start(bin)
}

// Pause stops the node with SIGSTOP.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *Node) signal(sig syscall.Signal, paused bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.aliveLocked() {
		return fmt.Errorf("cluster: %s is not running", n.ID)
	}
	if err := syscall.Kill(-n.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("cluster: %v to %s: %w", sig, n.ID, err)
	}
	n.paused = paused
	return nil
}

// WaitLeader polls until some running, unpaused node reports itself leader
// with a master lease, and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, within time.Duration) (*Node, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		if n := c.Leader(ctx); n != nil {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: no leader with a master lease within %v", within)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Leader returns a running, unpaused node that reports itself leader with
// a master lease, or nil.
func (c *Cluster) Leader(ctx context.Context) *Node {
	for _, n := range c.Nodes {
		if !n.Alive() || n.Paused() {
			continue
		}
		st, err := n.Status(ctx)
		if err == nil && leads(st.State) && st.MasterLeaseRemaining != nil && st.MasterLeaseRemaining.D() > 0 {
			return n
		}
	}
	return nil
}

// leads reports whether a node's state in GET /v1/cluster is the serving
// one: "Leader" in Raft mode, "coordinator" in the classic modes.
func leads(state string) bool { return state == "Leader" || state == "coordinator" }

// RaftLeader returns the node that running nodes name as leader, even one
// without a lease or one that is paused, or nil.
func (c *Cluster) RaftLeader(ctx context.Context) *Node {
	for _, n := range c.Nodes {
		if !n.Alive() || n.Paused() {
			continue
		}
		st, err := n.Status(ctx)
		if err == nil && st.Leader != nil && st.Leader.ID != "" {
			if l := c.Node(st.Leader.ID); l != nil {
				return l
			}
		}
	}
	return nil
}
