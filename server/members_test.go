package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// waitRemoved waits until s has learnt it was removed.
func waitRemoved(t *testing.T, s *server.Server, within time.Duration) {
	t.Helper()
	select {
	case <-s.Node().Removed():
	case <-time.After(within):
		t.Fatalf("%s did not learn of its removal within %v", s.ID(), within)
	}
}

// mustAnswerRemoved checks that the node at base answers the API 410
// removed, /readyz 503 removed, and /healthz 200.
func mustAnswerRemoved(t *testing.T, a *nodeAPI) {
	t.Helper()
	for _, path := range []string{"/v1/locks", "/v1/cluster"} {
		if st, e := a.do("GET", path, nil, nil); st != 410 || e.Code != api.CodeRemoved {
			t.Errorf("GET %s on a removed node = %d %q, want 410 removed", path, st, e.Code)
		}
	}
	if st, e := a.do("POST", "/v1/sessions", api.CreateSessionRequest{}, nil); st != 410 || e.Code != api.CodeRemoved {
		t.Errorf("POST /v1/sessions on a removed node = %d %q, want 410 removed (not forwarded)", st, e.Code)
	}
	if st, e := a.do("GET", "/readyz", nil, nil); st != 503 || e.Code != api.CodeRemoved {
		t.Errorf("/readyz on a removed node = %d %q, want 503 removed", st, e.Code)
	}
	if st, _ := a.do("GET", "/healthz", nil, nil); st != 200 {
		t.Errorf("/healthz on a removed node = %d, want 200", st)
	}
}

// TestCluster_RemovedFollowerStopsServing removes a follower: it learns
// that its removal is committed, answers 410 removed, and says so again
// when started on its data dir, until it is added back; then it serves.
func TestCluster_RemovedFollowerStopsServing(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	f := c.Follower(leader)
	l, fol := newAPI(t, c, leader), newAPI(t, c, f)
	id, peer, httpURL := c.Nodes[f].ID(), c.Nodes[f].PeerAddr(), c.Nodes[f].HTTPURL()

	l.must("DELETE", "/v1/cluster/members/"+id, nil, nil)
	t0 := time.Now()
	waitRemoved(t, c.Nodes[f], 10*time.Second)
	t.Logf("removed after %v", time.Since(t0))
	mustAnswerRemoved(t, fol)

	// Started again on its data, it still knows, and does not ask to be
	// added back.
	if err := c.Stop(f); err != nil {
		t.Fatal(err)
	}
	c.Start(f)
	if c.Nodes[f].Node().Removal() == nil {
		t.Fatal("a removed node restarted on its data forgot its removal")
	}
	mustAnswerRemoved(t, fol)
	time.Sleep(time.Second) // long enough for a registration to show
	for _, m := range l.cluster().Members {
		if m.ID == id {
			t.Fatalf("the restarted removed node was added back without an operator: %+v", m)
		}
	}

	// Added back by an operator, it serves again.
	l.must("POST", "/v1/cluster/members", api.Member{ID: id, Peer: peer, HTTP: httpURL}, nil)
	servertest.WaitFor(t, 10*time.Second, "the node added back to serve", func() bool {
		st, _ := fol.do("GET", "/readyz", nil, nil)
		return st == 200
	})
	select {
	case <-c.Nodes[f].Node().Removed():
		t.Fatal("the node added back closed Removed")
	default:
	}
	fol.session(10*time.Second, 0)
}

// TestCluster_RemovedFollowerBehindLearnsItsRemoval removes a follower
// that is cut off and behind the leader's log, then heals it: the leader
// keeps telling it, sends the entries up to the removal that it lacks, and
// the node learns of its removal and stops serving. (Telling it once, or
// giving up at the first answer that it lacks the removal entry, left it
// answering no_leader until it was stopped.)
func TestCluster_RemovedFollowerBehindLearnsItsRemoval(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	f := c.Follower(leader)
	l := newAPI(t, c, leader)
	c.Isolate(f)
	for range 5 {
		l.session(10*time.Second, 0) // entries the cut-off follower lacks
	}
	l.must("DELETE", "/v1/cluster/members/"+c.Nodes[f].ID(), nil, nil)
	// Cut off for more than a few heartbeats: the leader's first tries
	// fail to reach it.
	time.Sleep(3 * time.Second)
	select {
	case <-c.Nodes[f].Node().Removed():
		t.Fatal("a cut-off follower learnt of its removal")
	default:
	}
	c.Heal(f)
	waitRemoved(t, c.Nodes[f], 20*time.Second)
	mustAnswerRemoved(t, newAPI(t, c, f))
}

// TestCluster_RemovedNodeJoinsAgainWithEmptyData: a follower is removed,
// its data deleted, and it is added back and started with --join, as the
// harness's membership fault does. Replaying the log from the start, it
// meets its own earlier removal before the configuration that added it
// back: it must not take that for its removal (it did, stopped, and left
// the cluster one voter short), and it serves.
func TestCluster_RemovedNodeJoinsAgainWithEmptyData(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	f := c.Follower(leader)
	l := newAPI(t, c, leader)
	id, peer, httpURL := c.Nodes[f].ID(), c.Nodes[f].PeerAddr(), c.Nodes[f].HTTPURL()
	for range 300 {
		l.session(time.Hour, 0) // a log to replay before the removal
	}
	l.must("DELETE", "/v1/cluster/members/"+id, nil, nil)
	waitRemoved(t, c.Nodes[f], 10*time.Second)
	c.Crash(f)
	var dataDir string
	c.Configure(f, func(cfg *server.Config) {
		dataDir = cfg.Node.DataDir
		cfg.Node.InitialCluster = nil
		cfg.Node.Join = c.URL(leader)
	})
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		l.session(time.Hour, 0) // and more between the removal and the addition
	}
	l.must("POST", "/v1/cluster/members", api.Member{ID: id, Peer: peer, HTTP: httpURL}, nil)
	// The leader's messages reach it late, as on a slow link or a busy
	// machine: its replay takes many round trips, and the node looks at
	// its configuration between them.
	c.Nodes[leader].Faults().SetDelay(id, mux.Out, 100*time.Millisecond)
	c.Start(f)
	fol := newAPI(t, c, f)
	servertest.WaitFor(t, 20*time.Second, "the node added back to serve", func() bool {
		st, _ := fol.do("GET", "/readyz", nil, nil)
		return st == 200
	})
	c.Nodes[leader].Faults().HealAll()
	// Well past the time a removal takes to settle.
	time.Sleep(3 * time.Second)
	select {
	case <-c.Nodes[f].Node().Removed():
		t.Fatalf("the node added back took its earlier removal for a new one: %v", c.Nodes[f].Node().Removal())
	default:
	}
	if st, e := fol.do("GET", "/readyz", nil, nil); st != 200 {
		t.Fatalf("the node added back: /readyz %d %s", st, e.Code)
	}
}

// TestCluster_MemberErrors: unknown ids, the last voter.
func TestCluster_MemberErrors(t *testing.T) {
	c := servertest.New(t, 1)
	l := newAPI(t, c, c.WaitLeader())
	if st, e := l.do("DELETE", "/v1/cluster/members/n9", nil, nil); st != 404 || e.Code != api.CodeNotFound {
		t.Errorf("removing an unknown member = %d %q, want 404 not_found", st, e.Code)
	}
	if st, e := l.do("DELETE", "/v1/cluster/members/n1", nil, nil); st != 400 || e.Code != api.CodeBadRequest {
		t.Errorf("removing the last voter = %d %q %s, want 400 bad_request", st, e.Code, e.Message)
	}
	if st, e := l.do("POST", "/v1/cluster/leader-transfer", nil, nil); st != 400 || e.Code != api.CodeBadRequest {
		t.Errorf("transfer in a one-node cluster = %d %q %s, want 400 bad_request", st, e.Code, e.Message)
	}
	if c.Nodes[0].Node().Removal() != nil {
		t.Fatal("the refused removal removed the node")
	}
}

// TestCluster_LeaderTransfer hands leadership over through a follower
// (which forwards, and waits for the answer across the change of
// leader) while a client keeps taking and releasing a lock: the named
// voter leads, the lock's tokens keep increasing, and the lease logs show
// no two nodes that could serve at once. Bad targets are refused without
// a change of leader.
func TestCluster_LeaderTransfer(t *testing.T) {
	dir := t.TempDir()
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		cfg.Node.LeaseLog = filepath.Join(dir, fmt.Sprintf("n%d.lease", i+1))
	})
	leader := c.WaitLeader()
	f := c.Follower(leader)
	other := 3 - leader - f
	via := newAPI(t, c, f)
	before := c.Nodes[leader].Node().Raft().CurrentTerm()

	for _, tt := range []struct {
		to     string
		status int
		code   string
	}{
		{"n9", 404, api.CodeNotFound},
		{c.Nodes[leader].ID(), 400, api.CodeBadRequest},
	} {
		if st, e := via.do("POST", "/v1/cluster/leader-transfer", api.TransferRequest{To: tt.to}, nil); st != tt.status || e.Code != tt.code {
			t.Errorf("transfer to %s = %d %q %s, want %d %s", tt.to, st, e.Code, e.Message, tt.status, tt.code)
		}
	}
	if got := c.Nodes[leader].Node().Raft().CurrentTerm(); got != before {
		t.Fatalf("a refused transfer changed the term %d -> %d", before, got)
	}

	// A lock taken and released in a loop through every node.
	var (
		mu     sync.Mutex
		tokens []uint64
		stop   = make(chan struct{})
		done   = make(chan struct{})
	)
	sid := newAPI(t, c, leader).session(30*time.Second, 0)
	go func() {
		defer close(done)
		var seq uint64
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a := &nodeAPI{t: t, base: c.URL(i % 3)}
			seq++
			var r api.AcquireResponse
			st, e := a.do("POST", "/v1/locks/moving/acquire", api.AcquireRequest{Session: sid, Seq: seq}, &r)
			if st == 200 {
				mu.Lock()
				tokens = append(tokens, r.Token)
				mu.Unlock()
			}
			if st == 200 || e.Code == api.CodeTimeout || st == 0 {
				// Held, or perhaps held: release before the next round.
				for range 200 {
					seq++
					if a.release(sid, seq) == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)

	target := c.Nodes[other].ID()
	var res api.TransferResponse
	via.must("POST", "/v1/cluster/leader-transfer", api.TransferRequest{To: target}, &res)
	if res.From != c.Nodes[leader].ID() || res.Leader.ID != target {
		t.Fatalf("transfer answered %+v, want from %s to %s", res, c.Nodes[leader].ID(), target)
	}
	servertest.WaitFor(t, 10*time.Second, target+" to serve as leader", func() bool {
		ok, _ := c.Nodes[other].Node().Leader()
		return ok && c.Nodes[other].Node().Ready(t.Context()) == nil
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	if len(tokens) < 5 {
		t.Fatalf("only %d acquires succeeded around the transfer", len(tokens))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token %d after %d: not increasing across the transfer (%v)", tokens[i], tokens[i-1], tokens)
		}
	}
	var lines []validate.LeaseLine
	for i := range 3 {
		fh, err := os.Open(filepath.Join(dir, fmt.Sprintf("n%d.lease", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		ls, _, err := validate.ParseLeaseLog(fh)
		_ = fh.Close() // read only
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, ls...)
	}
	if v := validate.CheckMasterLease(lines, 0, false); !v.OK() {
		t.Fatalf("master leases across the transfer: %v", v)
	}
	terms := map[string]bool{}
	for _, l := range lines {
		if l.Until > l.From {
			terms[l.Node] = true
		}
	}
	if !terms[c.Nodes[leader].ID()] || !terms[target] {
		t.Fatalf("the lease logs do not show both leaders serving (%v): the check saw nothing", terms)
	}
}

// release releases the lock moving; nil when the session no longer
// holds it.
func (a *nodeAPI) release(sid string, seq uint64) error {
	st, e := a.do("POST", "/v1/locks/moving/release", api.SessionRequest{Session: sid, Seq: seq}, nil)
	if st == 200 || e.Code == api.CodeNotHolder {
		return nil
	}
	return fmt.Errorf("%d %s", st, e.Code)
}

// TestCluster_TransferToUnreachableRefused: a transfer to a voter that has
// not confirmed lately that it follows the leader is refused before the
// leader gives anything up; it still leads and serves.
func TestCluster_TransferToUnreachableRefused(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	f := c.Follower(leader)
	c.Isolate(f)
	t.Cleanup(func() { c.Heal(f) })
	time.Sleep(c.Nodes[leader].Config().Node.HeartbeatTimeout * 2)
	l := newAPI(t, c, leader)
	if st, e := l.do("POST", "/v1/cluster/leader-transfer", api.TransferRequest{To: c.Nodes[f].ID()}, nil); st != 504 || e.Code != api.CodeTimeout {
		t.Fatalf("transfer to a cut-off node = %d %q %s, want 504 timeout", st, e.Code, e.Message)
	}
	if ok, _ := c.Nodes[leader].Node().Leader(); !ok || c.Nodes[leader].Node().Ready(t.Context()) != nil {
		t.Fatal("the leader stopped serving for a refused transfer")
	}
}

// TestCluster_FailedTransferHandsOver: the target is cut off just after it
// last confirmed it follows, so the transfer is tried and fails: the old
// leader, which gave up its lease for the transfer, answers 504, serves
// no more, and hands leadership to the other voter.
func TestCluster_FailedTransferHandsOver(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	f := c.Follower(leader)
	other := 3 - leader - f
	l := newAPI(t, c, leader)
	c.Isolate(f)
	t.Cleanup(func() { c.Heal(f) })
	st, e := l.do("POST", "/v1/cluster/leader-transfer", api.TransferRequest{To: c.Nodes[f].ID()}, nil)
	if st != 504 || e.Code != api.CodeTimeout || !strings.Contains(e.Message, "failed") {
		t.Skipf("the transfer was not tried and failed (%d %q %s): the precheck ran after the cut", st, e.Code, e.Message)
	}
	if c.Nodes[leader].Node().Ready(t.Context()) == nil {
		t.Fatal("the old leader serves after a failed transfer it gave its lease up for")
	}
	servertest.WaitFor(t, 10*time.Second, "the other voter to serve as leader", func() bool {
		ok, _ := c.Nodes[other].Node().Leader()
		return ok && c.Nodes[other].Node().Ready(t.Context()) == nil
	})
}
