package lease

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The tests in this file hold hashicorp/raft's follower loop in the one
// place where it has decided to campaign but is not a candidate yet, and
// check that the follower's promise holds anyway.
//
// runFollower, when its heartbeat timer fires with the last contact a
// heartbeat timeout old, clears the leader, logs "heartbeat timeout
// reached, starting election", and becomes a candidate, without reading
// the contact again. A heartbeat handled on the transport's goroutine
// between the two (NetworkTransport hands heartbeats to Raft on the
// connection's goroutine, not through the main loop) sets the leader back
// with a fresh contact, and the lease exchange then sees a follower with a
// fresh contact: promise() answers a full heartbeat timeout, and the node
// campaigns right after. The window is one log write; here the log sink
// holds it open (a full pipe or a slow log driver does the same).

// raceNet is the test network of the in-memory Raft transports and the
// lease exchange's TCP connections: links can be cut (both ways), and the
// AppendEntries that carry more than a heartbeat can be dropped towards
// one node (on the held follower they would queue behind its main loop
// and, once it runs, make it follow the old leader again: in the natural
// race the loop is held for microseconds and nothing queues).
type raceNet struct {
	mu       sync.Mutex
	cut      map[[2]string]bool
	hb       map[string]func(raft.RPC)
	dropApps string // non-heartbeat AppendEntries to this node fail
}

var errLinkCut = errors.New("link cut")

func (n *raceNet) isCut(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[[2]string{a, b}]
}

func (n *raceNet) setCut(a, b string, cut bool) {
	n.mu.Lock()
	n.cut[[2]string{a, b}], n.cut[[2]string{b, a}] = cut, cut
	n.mu.Unlock()
}

// block cuts the link from a to b only.
func (n *raceNet) block(a, b string) {
	n.mu.Lock()
	n.cut[[2]string{a, b}] = true
	n.mu.Unlock()
}

func (n *raceNet) dropAppsTo(addr string) {
	n.mu.Lock()
	n.dropApps = addr
	n.mu.Unlock()
}

// raceTransport is an in-memory transport on raceNet with
// NetworkTransport's fast path for heartbeats and no pipeline.
type raceTransport struct {
	*raft.InmemTransport
	net *raceNet
}

func (t *raceTransport) local() string { return string(t.LocalAddr()) }

func (t *raceTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.net.mu.Lock()
	t.net.hb[t.local()] = cb
	t.net.mu.Unlock()
}

func (t *raceTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func isHeartbeat(a *raft.AppendEntriesRequest) bool {
	return a.Term != 0 && len(a.Addr) > 0 && a.PrevLogEntry == 0 && a.PrevLogTerm == 0 &&
		len(a.Entries) == 0 && a.LeaderCommitIndex == 0
}

func (t *raceTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, a *raft.AppendEntriesRequest, r *raft.AppendEntriesResponse) error {
	to := string(target)
	if t.net.isCut(t.local(), to) {
		return errLinkCut
	}
	t.net.mu.Lock()
	cb, drop := t.net.hb[to], t.net.dropApps == to
	t.net.mu.Unlock()
	if !isHeartbeat(a) || cb == nil {
		if drop && !isHeartbeat(a) {
			return errLinkCut
		}
		return t.InmemTransport.AppendEntries(id, target, a, r)
	}
	ch := make(chan raft.RPCResponse, 1)
	cb(raft.RPC{Command: a, RespChan: ch})
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return resp.Error
		}
		*r = *resp.Response.(*raft.AppendEntriesResponse)
		return nil
	case <-time.After(time.Second):
		return errors.New("heartbeat unanswered")
	}
}

func (t *raceTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, a *raft.RequestVoteRequest, r *raft.RequestVoteResponse) error {
	if t.net.isCut(t.local(), string(target)) {
		return errLinkCut
	}
	return t.InmemTransport.RequestVote(id, target, a, r)
}

func (t *raceTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, a *raft.RequestPreVoteRequest, r *raft.RequestPreVoteResponse) error {
	if t.net.isCut(t.local(), string(target)) {
		return errLinkCut
	}
	return t.InmemTransport.RequestPreVote(id, target, a, r)
}

func (t *raceTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, a *raft.TimeoutNowRequest, r *raft.TimeoutNowResponse) error {
	if t.net.isCut(t.local(), string(target)) {
		return errLinkCut
	}
	return t.InmemTransport.TimeoutNow(id, target, a, r)
}

// raceLayer is the lease exchange's Layer on raceNet: loopback TCP whose
// connections fail while their link is cut.
type raceLayer struct {
	net.Listener
	net *raceNet
}

func (l *raceLayer) local() string { return l.Addr().String() }

func (l *raceLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// The dialer's address is an ephemeral port: the accepting side
	// cannot name it, so cuts are enforced on the dialing side.
	return c, nil
}

func (l *raceLayer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	if l.net.isCut(l.local(), addr) {
		return nil, errLinkCut
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &raceConn{Conn: c, net: l.net, a: l.local(), b: addr}, nil
}

type raceConn struct {
	net.Conn
	net  *raceNet
	a, b string
}

func (c *raceConn) Write(p []byte) (int, error) {
	if c.net.isCut(c.a, c.b) {
		return 0, errLinkCut
	}
	return c.Conn.Write(p)
}

func (c *raceConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == nil && c.net.isCut(c.a, c.b) {
		return 0, errLinkCut
	}
	return n, err
}

// campaignGate is a Raft log sink that holds the writer of the message
// Raft logs between deciding to campaign and campaigning, once armed.
type campaignGate struct {
	armed atomic.Bool
	hit   chan struct{}
	open  chan struct{}
	once  sync.Once
}

func newCampaignGate() *campaignGate {
	return &campaignGate{hit: make(chan struct{}), open: make(chan struct{})}
}

func (g *campaignGate) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("heartbeat timeout reached, starting election")) && g.armed.CompareAndSwap(true, false) {
		close(g.hit)
		<-g.open
	}
	return len(p), nil
}

func (g *campaignGate) release() { g.once.Do(func() { close(g.open) }) }

// raceNode is one node of a raceCluster: its Raft and lockd's engine
// parts that the lease needs (guarded transport, lease exchange, promise).
type raceNode struct {
	addr string
	raft *raft.Raft
	eng  *raftEngine
	gate *campaignGate
}

type raceCluster struct {
	t     *testing.T
	net   *raceNet
	nodes []*raceNode
}

// newRaceCluster starts three Raft nodes with lockd's default timeouts,
// each behind lockd's guarded transport and answering the lease exchange
// with lockd's promise, and waits for a leader.
func newRaceCluster(t *testing.T) *raceCluster {
	t.Helper()
	return newRaceClusterWith(t, raceOptions{})
}

// raceOptions change what newRaceClusterWith starts.
type raceOptions struct {
	// config changes every node's configuration (validConfig with the
	// node's ID and address) before its Raft starts.
	config func(*Config)
	// promise, if set, gives what a node answers to the lease exchange in
	// place of its engine's promise.
	promise func(e *raftEngine) promiser
}

// newRaceClusterWith is newRaceCluster with opts.
func newRaceClusterWith(t *testing.T, opts raceOptions) *raceCluster {
	t.Helper()
	c := &raceCluster{t: t, net: &raceNet{cut: map[[2]string]bool{}, hb: map[string]func(raft.RPC){}}}
	var lns []net.Listener
	var conf raft.Configuration
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		a := ln.Addr().String()
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(a), Address: raft.ServerAddress(a)})
	}
	var inm []*raft.InmemTransport
	for _, s := range conf.Servers {
		_, tr := raft.NewInmemTransport(s.Address)
		inm = append(inm, tr)
	}
	for i := range inm {
		for j := range inm {
			if i != j {
				inm[i].Connect(conf.Servers[j].Address, inm[j])
			}
		}
	}
	for i, s := range conf.Servers {
		cfg := validConfig()
		cfg.ID, cfg.PeerAddr = string(s.ID), string(s.Address)
		if opts.config != nil {
			opts.config(&cfg)
		}
		rn := &raceNode{addr: string(s.Address), gate: newCampaignGate()}
		e := &raftEngine{n: &Node{cfg: cfg, clock: SystemClock{}, log: slog.New(slog.DiscardHandler)}}
		e.trans = newGuardedTransport(&raceTransport{InmemTransport: inm[i], net: c.net}, s.ID, &guardCounts{})
		hl := hclog.New(&hclog.LoggerOptions{Output: rn.gate, Level: hclog.Warn})
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(e.raftConfig(hl), &raft.MockFSM{}, store, store, raft.NewInmemSnapshotStore(), e.trans)
		if err != nil {
			t.Fatal(err)
		}
		e.raft = r
		e.trans.start(r, e.beforeTimeoutNow)
		answer := e.promise
		if opts.promise != nil {
			answer = opts.promise(e)
		}
		e.x = newExchange(&raceLayer{Listener: lns[i], net: c.net}, answer)
		e.x.released = e.released
		e.x.serve()
		rn.raft, rn.eng = r, e
		c.nodes = append(c.nodes, rn)
	}
	if err := c.nodes[0].raft.BootstrapCluster(conf).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.gate.release()
		}
		for _, n := range c.nodes {
			_ = n.raft.Shutdown().Error()
			n.eng.x.close()
		}
	})
	if c.leader() < 0 {
		await(t, 10*time.Second, "a first leader", func() bool { return c.leader() >= 0 })
	}
	return c
}

// leader returns the position of the node in the leader state, or -1.
func (c *raceCluster) leader() int {
	for i, n := range c.nodes {
		if n.raft.State() == raft.Leader {
			return i
		}
	}
	return -1
}

func (c *raceCluster) cut(i, j int, cut bool) { c.net.setCut(c.nodes[i].addr, c.nodes[j].addr, cut) }

func await(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(within); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

// leaseLoop renews the master lease of node i in term as leaderTerm's
// loop does (start read before each round, every renewInterval), and
// keeps the latest end any round gave, until stop is closed.
type leaseRounds struct {
	end, renewed atomic.Int64 // Unix nanoseconds
	stop, done   chan struct{}
}

func (c *raceCluster) renew(i int, term uint64) *leaseRounds {
	e := c.nodes[i].eng
	l := &leaseRounds{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			start := time.Now()
			if until, err := e.lease(term, start); err == nil && until.UnixNano() > l.end.Load() {
				l.end.Store(until.UnixNano())
				l.renewed.Store(time.Now().UnixNano())
			}
			select {
			case <-l.stop:
				return
			case <-time.After(e.n.cfg.renewInterval()):
			}
		}
	}()
	c.t.Cleanup(l.halt)
	return l
}

func (l *leaseRounds) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// TestPromise_HeldCampaignCannotOverlapTheLease drives the race: follower
// F1's heartbeat timer fires and Raft is held between clearing the leader
// and becoming a candidate; the leader L's heartbeats and lease questions
// reach F1 again (F1 follows L with a fresh contact and promises a full
// heartbeat timeout), F2 stops hearing from L and times out, and L renews
// its lease on F1's promise. Then L is cut off and F1's Raft goes on to
// campaign. No node may become leader while L, still Raft leader, holds
// its master lease: before lockd enforced the promise at the transport,
// F1 won with F2's vote within a millisecond, hundreds of milliseconds
// before L's lease ended.
func TestPromise_HeldCampaignCannotOverlapTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Raft nodes for several heartbeat timeouts")
	}
	for trial := range 3 {
		t.Run(fmt.Sprintf("trial%d", trial), func(t *testing.T) { heldCampaignTrial(t) })
	}
}

func heldCampaignTrial(t *testing.T) {
	c := newRaceCluster(t)
	L := c.leader()
	F1, F2 := (L+1)%3, (L+2)%3
	l, f1, f2 := c.nodes[L], c.nodes[F1], c.nodes[F2]
	term := l.raft.CurrentTerm()
	hb := l.eng.n.cfg.HeartbeatTimeout
	rounds := c.renew(L, term)
	await(t, 3*time.Second, "a first master lease", func() bool { return rounds.end.Load() > time.Now().UnixNano() })

	leaderOf := func(n *raceNode) string { _, id := n.raft.LeaderWithID(); return string(id) }
	defer func() {
		if t.Failed() {
			t.Logf("L %s state %v term %d; F1 leader %q contact %v ago, promise %v; F2 leader %q; lease ends in %v, renewed %v ago",
				l.addr, l.raft.State(), l.raft.CurrentTerm(), leaderOf(f1), time.Since(f1.raft.LastContact()),
				f1.eng.promise(term, l.addr), leaderOf(f2), time.Until(time.Unix(0, rounds.end.Load())),
				time.Since(time.Unix(0, rounds.renewed.Load())))
		}
	}()
	// 1. F1 stops hearing from L; Raft is held in the log write.
	f1.gate.armed.Store(true)
	c.cut(L, F1, true)
	select {
	case <-f1.gate.hit:
	case <-time.After(10 * hb):
		t.Fatal("F1's heartbeat timer never fired")
	}
	// 2. L reaches F1 again with heartbeats and lease questions, and loses F2.
	//    (L's contact with F1 comes back first, or L, on F2 alone, would
	//    step down: Raft backs its heartbeats off while a link fails.)
	c.net.dropAppsTo(f1.addr)
	c.cut(L, F1, false)
	await(t, 10*time.Second, "F1 to follow L again with a fresh contact", func() bool {
		return leaderOf(f1) == l.addr && time.Since(f1.raft.LastContact()) < hb/10
	})
	c.cut(L, F2, true)
	// F2's own campaigns do not reach F1, so that they cannot get in the
	// way of F1's: F2, with pre-votes refused, stays in term and grants F1
	// its vote as soon as F1 asks.
	c.net.block(f2.addr, f1.addr)
	await(t, 10*hb, "F2 to time out", func() bool {
		return leaderOf(f2) == "" && time.Since(f2.raft.LastContact()) > hb
	})
	await(t, 5*time.Second, "L to renew its lease on F1's promise", func() bool {
		return rounds.renewed.Load() > time.Now().Add(-hb/20).UnixNano() &&
			time.Until(time.Unix(0, rounds.end.Load())) > hb/2
	})
	// 3. L is cut off; F1's Raft goes on.
	c.cut(L, F1, true)
	rounds.halt()
	leaseEnd := time.Unix(0, rounds.end.Load())
	f1.gate.release()

	// 4. Watch until a new leader is elected.
	for end := time.Now().Add(20 * hb); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		for _, i := range []int{F1, F2} {
			if c.nodes[i].raft.State() != raft.Leader {
				continue
			}
			now := time.Now()
			if l.raft.State() == raft.Leader && now.Before(leaseEnd) {
				t.Fatalf("%s became leader %v before the end of the master lease of %s, still Raft leader",
					c.nodes[i].addr, leaseEnd.Sub(now).Round(time.Millisecond), l.addr)
			}
			t.Logf("new leader %s, %v after the old lease ended (guard refused %d votes on F1)",
				c.nodes[i].addr, now.Sub(leaseEnd).Round(time.Millisecond), f1.eng.trans.count.votes.Load())
			return
		}
	}
	t.Fatal("no new leader was elected")
}

// giveUp makes node i's engine know a leader term for Raft term term with
// its lease given up, as TransferLeadership and Close leave it.
func (c *raceCluster) giveUp(i int, term uint64) {
	n := c.nodes[i].eng.n
	t := newLeaderTerm(n, term)
	t.given = true
	n.mu.Lock()
	n.term = t
	n.mu.Unlock()
}

// TestPromise_TransferCompletesWhilePromisesRun: a leader that gave its
// lease up transfers leadership at once, though its followers' promises
// still run: the release before TimeoutNow ends them. Raft gives a
// transfer one election timeout (500ms), no longer than a promise, so a
// transfer that waited for the promises to run out would fail.
func TestPromise_TransferCompletesWhilePromisesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Raft nodes")
	}
	c := newRaceCluster(t)
	L := c.leader()
	F1, F2 := (L+1)%3, (L+2)%3
	l := c.nodes[L]
	term := l.raft.CurrentTerm()
	rounds := c.renew(L, term)
	await(t, 3*time.Second, "both followers bound by a promise", func() bool {
		return c.nodes[F1].eng.trans.guard.bound() && c.nodes[F2].eng.trans.guard.bound()
	})
	rounds.halt()
	c.giveUp(L, term)
	// Refusals before the transfer do not count: a node that had not yet
	// heard from the new leader may have campaigned into the promises.
	before := make([]uint64, len(c.nodes))
	for i, n := range c.nodes {
		before[i] = n.eng.trans.count.votes.Load()
	}
	f1 := c.nodes[F1]
	if err := l.raft.LeadershipTransferToServer(raft.ServerID(f1.addr), raft.ServerAddress(f1.addr)).Error(); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	await(t, 3*time.Second, "F1 to lead", func() bool { return f1.raft.State() == raft.Leader })
	for i, n := range c.nodes {
		if r := n.eng.trans.count.votes.Load() - before[i]; r != 0 {
			t.Errorf("%s refused %d votes in a transfer its leader released", n.addr, r)
		}
	}
	if got := f1.raft.CurrentTerm(); got != term+1 {
		t.Errorf("F1 leads in term %d, want %d", got, term+1)
	}
}

// TestPromise_NoTimeoutNowWhileTheLeaseHolds: a leader that still holds
// its lease (or knows no term of its own) sends no TimeoutNow, so a
// transfer started around lockd fails and the followers keep their
// promises.
func TestPromise_NoTimeoutNowWhileTheLeaseHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Raft nodes")
	}
	c := newRaceCluster(t)
	L := c.leader()
	l, f1 := c.nodes[L], c.nodes[(L+1)%3]
	term := l.raft.CurrentTerm()
	rounds := c.renew(L, term)
	await(t, 3*time.Second, "a master lease", func() bool { return rounds.end.Load() > time.Now().UnixNano() })
	for _, given := range []bool{false, true} {
		if given {
			lt := newLeaderTerm(l.eng.n, term) // a term of its own, lease held
			l.eng.n.mu.Lock()
			l.eng.n.term = lt
			l.eng.n.mu.Unlock()
		}
		err := l.raft.LeadershipTransferToServer(raft.ServerID(f1.addr), raft.ServerAddress(f1.addr)).Error()
		if err == nil {
			t.Fatalf("transfer with the lease held (term known: %v) succeeded", given)
		}
		if l.raft.State() != raft.Leader || l.raft.CurrentTerm() != term {
			t.Fatalf("the leader lost its term to a transfer it refused: %v, term %d", l.raft.State(), l.raft.CurrentTerm())
		}
		if f1.eng.trans.guard.released(l.addr, term) {
			t.Fatal("F1 released with the lease held")
		}
	}
}

// TestPromise_TimeoutNowNeedsTheReleaseOfItsTerm sends TimeoutNow around
// the leader's guard, as a TimeoutNow delayed from an earlier term would
// arrive: the follower obeys only once its leader released it for the
// term it is in. A release for an earlier term does not do.
func TestPromise_TimeoutNowNeedsTheReleaseOfItsTerm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Raft nodes")
	}
	c := newRaceCluster(t)
	L := c.leader()
	l, f1 := c.nodes[L], c.nodes[(L+1)%3]
	term := l.raft.CurrentTerm()
	// A node is leader before its first heartbeat reaches F1; until then
	// F1 follows nobody and answers a release with 0.
	await(t, 5*time.Second, "F1 to follow the leader", func() bool {
		_, id := f1.raft.LeaderWithID()
		return string(id) == l.addr && f1.raft.CurrentTerm() == term
	})
	raw := l.eng.trans.voteTransport // the leader's transport without its guard
	send := func() error {
		req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
			ID: []byte(l.addr), Addr: []byte(l.addr)}}
		return raw.TimeoutNow(raft.ServerID(f1.addr), raft.ServerAddress(f1.addr), req, &raft.TimeoutNowResponse{})
	}
	if err := send(); err == nil {
		t.Fatal("TimeoutNow obeyed without a release")
	}
	f1.eng.trans.guard.release(l.addr, term-1)
	if err := send(); err == nil {
		t.Fatal("TimeoutNow obeyed with a release for an earlier term")
	}
	if got := f1.eng.trans.count.timeoutNow.Load(); got != 2 {
		t.Fatalf("F1 counted %d refused TimeoutNow, want 2", got)
	}
	if f1.raft.CurrentTerm() != term || l.raft.State() != raft.Leader {
		t.Fatal("a refused TimeoutNow started an election")
	}
	if ans := f1.eng.released(term, l.addr); ans != releasedAnswer {
		t.Fatalf("F1 answered the release with %v, want %v", ans, releasedAnswer)
	}
	if err := send(); err != nil {
		t.Fatalf("TimeoutNow refused after the release of its term: %v", err)
	}
	await(t, 3*time.Second, "F1 to campaign", func() bool { return f1.raft.CurrentTerm() > term })
}

// TestPromiseGuard_ArmsBeforeMeasuring: the guard holds from before Raft's
// state is read for a promise, a promise never outlasts what the guard
// holds, and a release ends the promise and refuses new ones to that
// leader in that term.
func TestPromiseGuard_ArmsBeforeMeasuring(t *testing.T) {
	g := newPromiseGuard()
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	if g.bound() {
		t.Fatal("bound before any promise")
	}
	var boundWhileMeasuring bool
	got := g.give("L", 3, time.Second, func() time.Duration {
		boundWhileMeasuring = g.bound()
		now = now.Add(300 * time.Millisecond) // measuring took time
		return time.Second                    // and Raft's state would allow a full second
	})
	if !boundWhileMeasuring {
		t.Error("the guard did not hold while Raft's state was read")
	}
	if got != 700*time.Millisecond {
		t.Errorf("promise %v, want 700ms: no longer than the guard holds from when it was armed", got)
	}
	now = now.Add(699 * time.Millisecond)
	if !g.bound() {
		t.Error("not bound within the promise")
	}
	now = now.Add(2 * time.Millisecond)
	if g.bound() {
		t.Error("still bound after the promise")
	}
	if got := g.give("L", 3, time.Second, func() time.Duration { return 0 }); got != 0 || g.bound() {
		t.Errorf("no promise (%v) left the guard bound: %v", got, g.bound())
	}
	g.give("L", 3, time.Second, func() time.Duration { return time.Second })
	g.give("M", 4, time.Second, func() time.Duration { return time.Second })
	g.release("L", 3)
	if !g.bound() {
		t.Error("a release of L ended the promise to M")
	}
	g.release("M", 4)
	if g.bound() {
		t.Error("bound after both leaders released")
	}
	if got := g.give("M", 4, time.Second, func() time.Duration { t.Error("measured for a released leader"); return 0 }); got != releasedAnswer {
		t.Errorf("a released leader got %v, want releasedAnswer", got)
	}
	if !g.released("M", 4) || g.released("L", 3) || g.released("M", 5) {
		t.Error("released reports the wrong leader or term")
	}
	// A release that arrives while a promise is measured wins: no promise.
	got = g.give("N", 5, time.Second, func() time.Duration { g.release("N", 5); return time.Second })
	if got != releasedAnswer || g.bound() {
		t.Errorf("release during measurement: answer %v, bound %v", got, g.bound())
	}
}

// TestGuardedTransport_NoGrantLeavesWhileBound checks the guard on the
// receiving side without Raft: a vote request that arrives while the node
// is bound never reaches Raft and is refused; one that reached Raft
// before the node promised, and that Raft grants after, leaves as a
// refusal; once the promise ends, grants pass. Pre-votes are guarded the
// same way.
func TestGuardedTransport_NoGrantLeavesWhileBound(t *testing.T) {
	_, candidate := raft.NewInmemTransport("candidate")
	voterAddr, voter := raft.NewInmemTransport("voter")
	candidate.Connect(voterAddr, voter)
	g := newGuardedTransport(voter, "voter", &guardCounts{})
	t.Cleanup(func() { _ = g.Close(); _ = candidate.Close() })
	now := time.Now()
	g.guard.now = func() time.Time { return now }

	vote := func() (*raft.RequestVoteResponse, error) {
		var resp raft.RequestVoteResponse
		err := candidate.RequestVote("voter", voterAddr, &raft.RequestVoteRequest{Term: 7}, &resp)
		return &resp, err
	}
	// Raft's stand-in grants every vote; before it answers, the test may
	// make the node promise.
	beforeAnswer := make(chan func(), 1)
	var reached atomic.Int32 // requests that reached Raft's stand-in
	go func() {
		for rpc := range g.Consumer() {
			reached.Add(1)
			select {
			case f := <-beforeAnswer:
				f()
			default:
			}
			if _, ok := rpc.Command.(*raft.RequestPreVoteRequest); ok {
				rpc.Respond(&raft.RequestPreVoteResponse{Term: 7, Granted: true}, nil)
				continue
			}
			rpc.Respond(&raft.RequestVoteResponse{Term: 7, Granted: true}, nil)
		}
	}()
	preVote := func() (*raft.RequestPreVoteResponse, error) {
		var resp raft.RequestPreVoteResponse
		err := candidate.RequestPreVote("voter", voterAddr, &raft.RequestPreVoteRequest{Term: 7}, &resp)
		return &resp, err
	}

	if r, err := vote(); err != nil || !r.Granted {
		t.Fatalf("unbound: granted %v, %v", r.Granted, err)
	}
	// Bound while Raft handles the request: the grant leaves as a refusal.
	beforeAnswer <- func() { g.guard.give("L", 3, time.Second, func() time.Duration { return time.Second }) }
	if r, err := vote(); err != nil || r.Granted {
		t.Fatalf("a grant Raft made after the node promised left granted (%v, %v)", r.Granted, err)
	}
	// Bound when the request arrives: refused before Raft sees it, a
	// vote and a pre-vote alike.
	before := reached.Load()
	if r, err := vote(); err != nil || r.Granted || r.Term != 7 {
		t.Fatalf("bound: granted %v term %d, %v", r.Granted, r.Term, err)
	}
	if r, err := preVote(); err != nil || r.Granted || r.Term != 7 {
		t.Fatalf("bound: pre-vote granted %v term %d, %v", r.Granted, r.Term, err)
	}
	if got := reached.Load() - before; got != 0 {
		t.Errorf("%d requests made while bound reached Raft; want none", got)
	}
	if got := g.count.votes.Load(); got != 3 {
		t.Errorf("counted %d refusals, want 3", got)
	}
	now = now.Add(time.Second + time.Millisecond)
	if r, err := vote(); err != nil || !r.Granted {
		t.Fatalf("after the promise ended: granted %v, %v", r.Granted, err)
	}
	if r, err := preVote(); err != nil || !r.Granted {
		t.Fatalf("after the promise ended: pre-vote granted %v, %v", r.Granted, err)
	}
}
