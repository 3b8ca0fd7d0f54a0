package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/test/proccluster"
	"github.com/lockd/lockd/test/testnet"
)

// startTLSCluster starts a secured cluster of n processes (HTTPS with
// client certificates, mutual TLS between nodes) and waits for a leader.
// faults turns on the fault harness's aids (--unsafe-fault-injection).
// The timeouts are raised from the LAN defaults so that a busy machine
// does not cause elections of its own: the tests count elections.
func startTLSCluster(t *testing.T, n int, faults bool) (*proccluster.Cluster, *proccluster.Node) {
	t.Helper()
	return startSecuredCluster(t, proccluster.Config{Nodes: n, TLS: true, Plain: !faults})
}

// startSecuredCluster is startTLSCluster for a cluster configured as cfg
// (its size and security; the binary, directory and timeouts are the
// test's).
func startSecuredCluster(t *testing.T, cfg proccluster.Config) (*proccluster.Cluster, *proccluster.Node) {
	t.Helper()
	n := cfg.Nodes
	cfg.Binary, cfg.Dir = mustBuild(t), t.TempDir()
	cfg.Extra = append(cfg.Extra, "--heartbeat-timeout", "2s", "--election-timeout", "2s")
	c, leader := startCluster(t, cfg)
	// Every node registered (its https:// address in the member table).
	waitFor(t, 20*time.Second, "every member registered", func() bool {
		ms, err := leader.Members(context.Background())
		if err != nil || len(ms) != n {
			return false
		}
		for _, m := range ms {
			if !strings.HasPrefix(m.HTTP, "https://") {
				return false
			}
		}
		return true
	})
	return c, leader
}

// TestTLS_ClientsSpeakHTTPS: a node with --tls-cert, --tls-key and
// --client-ca serves HTTPS only, and only to clients with a certificate of
// its CA; the Go client and the CLI (flags and LOCKD_* variables) work
// with the CA and the client certificate.
func TestTLS_ClientsSpeakHTTPS(t *testing.T) {
	c, n := startTLSCluster(t, 1, false)
	if !strings.HasPrefix(n.HTTP, "https://") {
		t.Fatalf("node address %s", n.HTTP)
	}
	hostPort := strings.TrimPrefix(n.HTTP, "https://")

	// Plain HTTP is not served.
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + hostPort + "/v1/cluster")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP answered %s", resp.Status)
		}
	}

	ca, cert, key := c.TLSFile(certs.CAFile), c.TLSFile(certs.ClientFile), c.TLSFile(certs.ClientKeyFile)
	newClient := func(caFile, certFile, keyFile string) *client.Client {
		t.Helper()
		cfg, err := certs.ClientTLS(caFile, certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := client.NewWithConfig(client.Config{Endpoints: []string{n.HTTP}, TLS: cfg, RequestTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The Go client with the CA and the client certificate.
	good := newClient(ca, cert, key)
	s, err := client.NewSession(ctx, good, client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatalf("session over HTTPS: %v", err)
	}
	m := client.NewMutex(s, "tls/one")
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("lock over HTTPS: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Refused: no client certificate; no CA (the system's roots do not
	// know this one).
	for name, cl := range map[string]*client.Client{"no client certificate": newClient(ca, "", ""),
		"no CA": newClient("", cert, key)} {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		if _, err := cl.Cluster(cctx); err == nil {
			t.Errorf("%s: the cluster answered", name)
		}
		ccancel()
	}

	// The CLI, with flags and with the environment (a bare host:port then
	// means https://).
	bin := mustBuild(t)
	out, err := exec.Command(bin, "status", "--addr", n.HTTP, "--cacert", ca, "--cert", cert, "--key", key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), n.HTTP) {
		t.Fatalf("lockd status with --cacert/--cert/--key: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "lock", "--wait", "10s", "tls/cli", "--", "sh", "-c", "test -n \"$LOCKD_TOKEN\"")
	cmd.Env = append(os.Environ(), "LOCKD_ADDR="+hostPort, "LOCKD_CACERT="+ca, "LOCKD_CERT="+cert, "LOCKD_KEY="+key)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lockd lock with LOCKD_CACERT/CERT/KEY: %v\n%s", err, out)
	}
}

// TestTLS_IntrudersCannotJoinOrDisturb: on a 3-node cluster with mutual
// TLS between nodes, a node with a certificate of another CA and a node
// without TLS each try to join (--join): each gives up at once with a
// clear error and exit status 1, since no retry can fix a certificate.
// Two such nodes, started without --join, run beside the cluster, and the
// test sends Raft messages of a higher term, election and other protocol
// bytes to every peer port, over plain TCP and over TLS with another CA's
// certificate, and asks the leader to add each intruder as a voter.
// Meanwhile a lock workload goes through every node (followers forward
// over mutual TLS). Nothing may change: same members, same term, no failed
// request.
func TestTLS_IntrudersCannotJoinOrDisturb(t *testing.T) {
	c, leader := startTLSCluster(t, 3, false)
	ctx := context.Background()
	before, err := leader.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Members) != 3 {
		t.Fatalf("members %+v", before.Members)
	}

	work := startLockWorkload(t, c)

	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if _, err := certs.Init(other, []string{"n4", "n5"}, []string{"127.0.0.1", "localhost"}); err != nil {
		t.Fatal(err)
	}
	addrs, err := testnet.Ports("127.0.0.1", 8)
	if err != nil {
		t.Fatal(err)
	}
	joinVia := c.Nodes[0].HTTP
	o := func(name string) string { return filepath.Join(other, name) }
	foreignArgs := []string{"--tls-cert", o("n4.pem"), "--tls-key", o("n4-key.pem"), "--client-ca", o(certs.CAFile),
		"--peer-ca", o(certs.CAFile), "--peer-cert", o("n4.pem"), "--peer-key", o("n4-key.pem")}
	for i, args := range [][]string{foreignArgs, nil} {
		id := fmt.Sprintf("j%d", i+1)
		jctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := exec.CommandContext(jctx, mustBuild(t), append([]string{"serve", "--id", id, "--http", addrs[4+2*i],
			"--peer", addrs[5+2*i], "--data", filepath.Join(dir, id), "--join", joinVia}, args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		if code := exitCodeOf(err); code != 1 || !strings.Contains(string(out), "cannot join the cluster") || !strings.Contains(string(out), "certificate") {
			t.Errorf("%s joining with %v: exit %d (%v), want 1 and a certificate error:\n%s", id, args, code, err, tail(out, 10))
		}
	}
	intruders := []*intruder{
		startIntruder(t, dir, "n4", addrs[0], addrs[1], foreignArgs...),
		startIntruder(t, dir, "n5", addrs[2], addrs[3]),
	}

	// The cluster's CA, trusted by an intruder that holds a certificate of
	// another: it gets past checking the node, and must be refused itself.
	foreignTLS, err := certs.PeerTLS(o(certs.CAFile), o("n4.pem"), o("n4-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	trusting := foreignTLS.Clone()
	if trusting.RootCAs, err = certs.Pool(c.TLSFile(certs.CAFile)); err != nil {
		t.Fatal(err)
	}
	attackers := map[string]*mux.Mux{
		"plain":                        newAttackerMux(t, "n4"),
		"another CA":                   newAttackerMux(t, "n4", mux.WithTLS(foreignTLS)),
		"another CA, trusting ours":    newAttackerMux(t, "n4", mux.WithTLS(trusting)),
		"another CA, claiming n1's id": newAttackerMux(t, "n1", mux.WithTLS(trusting)),
	}
	for round := range 3 {
		for name, m := range attackers {
			for _, n := range c.Nodes {
				if err := sendRaft(m, n.Peer, before.Term); err == nil {
					t.Errorf("round %d, %s: a Raft message to %s was answered", round, name, n.ID)
				}
				for _, proto := range []byte{mux.ProtoRaft, mux.ProtoRing, mux.ProtoBully, mux.ProtoInvitation, mux.ProtoLease, mux.ProtoForward} {
					if answered(m, proto, n.Peer) {
						t.Errorf("round %d, %s: protocol %d to %s was answered", round, name, proto, n.ID)
					}
				}
			}
		}
		// Bytes of every protocol without even a mux header.
		for _, n := range c.Nodes {
			for _, proto := range []byte{mux.ProtoRaft, mux.ProtoBully, mux.ProtoLease, mux.ProtoForward} {
				if rawAnswered(n.Peer, proto) {
					t.Errorf("raw protocol %d bytes to %s were answered", proto, n.ID)
				}
			}
		}
		// A client of the cluster asks to add each intruder: the leader
		// must find that its peer port has no certificate of the CA.
		for _, in := range intruders {
			err := c.Nodes[1].Do(ctx, "POST", "/v1/cluster/members", api.Member{ID: in.id, Peer: in.peer, HTTP: "https://" + in.proc.http}, nil)
			if api.CodeOf(err) != api.CodeBadRequest {
				t.Errorf("round %d: adding %s as a voter: %v, want bad_request", round, in.id, err)
			}
		}
		time.Sleep(time.Second)
	}
	for _, in := range intruders {
		if !in.running() {
			t.Errorf("intruder %s exited early:\n%s", in.id, in.log())
		}
	}

	cycles, errs := work.stop()
	for _, e := range errs {
		t.Errorf("workload: %s", e)
	}
	if cycles < 10 {
		t.Errorf("the workload completed only %d acquire/release cycles", cycles)
	}
	for _, n := range c.Nodes {
		st, err := n.Status(ctx)
		if err != nil {
			t.Fatalf("%s: %v", n.ID, err)
		}
		if st.Term != before.Term {
			t.Errorf("%s: term %d, was %d", n.ID, st.Term, before.Term)
		}
		if !sameMembers(st.Members, before.Members) {
			t.Errorf("%s: members %+v, were %+v", n.ID, st.Members, before.Members)
		}
	}
	// The joiners' refusals are checked above; the nodes refused the
	// attackers at the handshake.
	refused := false
	for _, n := range c.Nodes {
		b, _ := os.ReadFile(n.LogPath)
		refused = refused || bytes.Contains(b, []byte("TLS handshake on the peer port refused"))
	}
	if !refused {
		t.Error("no node logged a refused peer handshake")
	}
}

// TestTLS_FaultRulesCutPeers: the fault hooks still cut the mutual TLS
// connections between nodes, as the fault harness drives them: a leader
// that drops every peer is replaced, and once healed the cluster is whole
// again with one leader.
func TestTLS_FaultRulesCutPeers(t *testing.T) {
	c, leader := startTLSCluster(t, 3, true)
	ctx := context.Background()
	before, err := leader.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var others []*proccluster.Node
	for _, n := range c.Nodes {
		if n != leader {
			others = append(others, n)
			if err := leader.SetFault(ctx, n.ID, "both", "drop"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Only a leader reports a master lease: either of the others may be it.
	waitFor(t, 30*time.Second, "the others to elect a new leader", func() bool {
		for _, n := range others {
			st, err := n.Status(ctx)
			if err == nil && st.Term > before.Term && st.Leader != nil && st.Leader.ID == n.ID &&
				st.MasterLeaseRemaining != nil && st.MasterLeaseRemaining.D() >= 0 {
				return true
			}
		}
		return false
	})
	if err := leader.HealFaults(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every node to follow one leader again", func() bool {
		var ids []string
		for _, n := range c.Nodes {
			st, err := n.Status(ctx)
			if err != nil || st.Leader == nil {
				return false
			}
			ids = append(ids, st.Leader.ID)
		}
		return ids[0] != "" && ids[0] == ids[1] && ids[1] == ids[2]
	})
}

// sameMembers compares member tables by id, peer, HTTP address and vote.
func sameMembers(a, b []api.Member) bool {
	key := func(ms []api.Member) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s %s %s %v", m.ID, m.Peer, m.HTTP, m.Voter))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// lockWorkload takes and releases a lock through every node in turn.
type lockWorkload struct {
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	cycles int
	errs   []string
}

// startLockWorkload runs acquire/release cycles of one session's lock,
// the requests going to each node in turn (so followers forward them),
// for at most 600 cycles or 60 s, until stop.
func startLockWorkload(t *testing.T, c *proccluster.Cluster) *lockWorkload {
	t.Helper()
	ctx := context.Background()
	zero := api.Duration(0)
	var s api.Session
	if err := c.Nodes[1].Do(ctx, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(60 * time.Second), LockDelay: &zero}, &s); err != nil {
		t.Fatalf("session through a node: %v", err)
	}
	w := &lockWorkload{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		deadline := time.Now().Add(60 * time.Second)
		for i := 0; i < 600 && time.Now().Before(deadline); i++ {
			select {
			case <-w.done:
				return
			default:
			}
			n := c.Nodes[i%len(c.Nodes)]
			var r api.AcquireResponse
			err := n.Do(ctx, "POST", "/v1/locks/tls/work/acquire", api.AcquireRequest{Session: s.ID}, &r)
			if err == nil {
				err = n.Do(ctx, "POST", "/v1/locks/tls/work/release", api.SessionRequest{Session: s.ID}, nil)
			}
			w.mu.Lock()
			if err != nil {
				w.errs = append(w.errs, fmt.Sprintf("cycle %d through %s: %v", i, n.ID, err))
			} else {
				w.cycles++
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the workload and returns its completed cycles and errors.
func (w *lockWorkload) stop() (int, []string) {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cycles, w.errs
}

// intruder is a lockd process that is not part of the cluster.
type intruder struct {
	*proc
	peer string
}

func startIntruder(t *testing.T, dir, id, httpAddr, peerAddr string, args ...string) *intruder {
	t.Helper()
	in := &intruder{proc: &proc{t: t, id: id, http: httpAddr, logPath: filepath.Join(dir, id+".log"),
		args: append([]string{mustBuild(t), "serve", "--id", id, "--http", httpAddr, "--peer", peerAddr,
			"--data", filepath.Join(dir, id)}, args...)}, peer: peerAddr}
	t.Cleanup(in.kill9)
	in.start()
	return in
}

func (in *intruder) log() string {
	b, _ := os.ReadFile(in.logPath)
	return tail(b, 20)
}

// newAttackerMux returns a mux that announces itself as id.
func newAttackerMux(t *testing.T, id string, opts ...mux.Option) *mux.Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mux.New(ln, id, nil, opts...)
	go func() { _ = m.Serve() }()
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// raftStream is a mux layer as Raft's stream layer.
type raftStream struct{ *mux.Layer }

func (s raftStream) Dial(a raft.ServerAddress, d time.Duration) (net.Conn, error) {
	return s.Layer.Dial(string(a), d)
}

// sendRaft sends, through m's Raft layer, an AppendEntries and a
// leadership-transfer RequestVote of a term far above term to the node at
// peer: either would move the node to that term if it got through. It
// returns nil if any of them was answered.
func sendRaft(m *mux.Mux, peer string, term uint64) error {
	l := m.Listen(mux.ProtoRaft)
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: raftStream{l}, MaxPool: 1, Timeout: 2 * time.Second})
	defer func() { _ = tr.Close() }()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n4"), Addr: []byte(m.Addr().String())}
	var ae raft.AppendEntriesResponse
	errAE := tr.AppendEntries("n1", raft.ServerAddress(peer),
		&raft.AppendEntriesRequest{RPCHeader: hdr, Term: term + 100, LeaderCommitIndex: 1}, &ae)
	var rv raft.RequestVoteResponse
	errRV := tr.RequestVote("n1", raft.ServerAddress(peer),
		&raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 200, LastLogIndex: 1 << 40, LastLogTerm: term + 100, LeadershipTransfer: true}, &rv)
	if errAE != nil && errRV != nil {
		return errors.Join(errAE, errRV)
	}
	return nil
}

// answered dials peer with proto through m, writes a line, and reports
// whether any byte comes back before the connection ends (2 s at most).
func answered(m *mux.Mux, proto byte, peer string) bool {
	l := m.Listen(proto)
	defer func() { _ = l.Close() }()
	c, err := l.Dial(peer, 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write([]byte("{\"type\":\"election\",\"from\":\"n4\",\"term\":1000}\n"))
	n, _ := c.Read(make([]byte, 1))
	return n > 0
}

// rawAnswered writes proto, a header and a payload on a plain TCP
// connection to peer and reports whether anything but the end of the
// connection comes back (2 s at most).
func rawAnswered(peer string, proto byte) bool {
	c, err := net.DialTimeout("tcp", peer, 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write(append([]byte{proto, 1, 2, 'n', '4'}, bytes.Repeat([]byte{0x81}, 64)...))
	b := make([]byte, 64)
	n, _ := c.Read(b)
	// A TLS server may answer garbage with an alert record before closing.
	return n > 0 && b[0] != 0x15
}
