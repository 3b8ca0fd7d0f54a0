package lease

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// soleElector names one node coordinator for good.
type soleElector struct{ id string }

func (e soleElector) Coordinator() (string, uint64, bool) { return e.id, 1, true }

// transferHook wraps a Node's engine and runs onTransfer when the node
// starts handing leadership over, before the engine does anything.
type transferHook struct {
	engine
	onTransfer func()
}

func (h *transferHook) transfer() error {
	h.onTransfer()
	return h.engine.transfer()
}

// servingNode opens a node that leads on its own and waits until it serves
// under its master lease. Its engine's transfer runs onTransfer first.
func servingNode(t *testing.T, onTransfer func(n *Node)) *Node {
	t.Helper()
	cfg := validConfig()
	cfg.DataDir = t.TempDir()
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	cfg.LeaderLeaseTimeout, cfg.LeaseMargin = 100*time.Millisecond, 20*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := NewLocal(cfg, Local{Elector: soleElector{cfg.ID}, Members: map[string]string{cfg.ID: "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	n.eng = &transferHook{engine: n.eng, onTransfer: func() { onTransfer(n) }}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Abort() })
	for deadline := time.Now().Add(5 * time.Second); n.Ready(context.Background()) != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node never served under a master lease")
		}
	}
	return n
}

// refusals checks everything a node answers under its master lease and
// returns what it still served.
func refusals(ctx context.Context, n *Node, sid string) []string {
	var served []string
	if err := n.Ready(ctx); api.CodeOf(err) != api.CodeNoLeader {
		served = append(served, "Ready: "+errString(err))
	}
	if _, err := n.Session(ctx, sid, api.ReadOptions{}); api.CodeOf(err) != api.CodeNoLeader {
		served = append(served, "default read: "+errString(err))
	}
	if _, err := n.KeepAlive(ctx, sid); api.CodeOf(err) != api.CodeNoLeader {
		served = append(served, "keepalive: "+errString(err))
	}
	if c, _ := n.Cluster(ctx); c.MasterLeaseRemaining != nil && *c.MasterLeaseRemaining > 0 {
		served = append(served, "cluster: master lease remaining "+c.MasterLeaseRemaining.D().String())
	}
	return served
}

func errString(err error) string {
	if err == nil {
		return "answered"
	}
	return err.Error()
}

// TestClose_LeaseGivenUpBeforeTransfer checks the order a leader stops in:
// a leadership transfer lets the followers elect a new leader at once,
// without waiting for the old leader's heartbeats to time out, so the
// master lease must already be gone when the transfer starts, and must stay
// gone while the transfer runs (lease rounds still succeed meanwhile: the
// node still leads).
func TestClose_LeaseGivenUpBeforeTransfer(t *testing.T) {
	var (
		mu       sync.Mutex
		sid      string
		called   bool
		atStart  []string
		duringIt []string
	)
	n := servingNode(t, func(n *Node) {
		mu.Lock()
		defer mu.Unlock()
		called = true
		ctx := context.Background()
		atStart = refusals(ctx, n, sid)
		// A whole heartbeat timeout, several lease renewals: the node still
		// leads while a transfer is under way, so its rounds still succeed.
		time.Sleep(n.cfg.HeartbeatTimeout)
		duringIt = refusals(ctx, n, sid)
	})
	s, err := n.CreateSession(context.Background(), api.CreateSessionRequest{TTL: api.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sid = s.ID
	mu.Unlock()
	if got := refusals(context.Background(), n, sid); len(got) != 4 {
		t.Fatalf("before Close the node served only %v; want all four (ready, read, keepalive, lease)", got)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !called {
		t.Fatal("Close of a leader did not start a leadership transfer")
	}
	if len(atStart) > 0 {
		t.Errorf("when the transfer started the node still served under its lease: %v", atStart)
	}
	if len(duringIt) > 0 {
		t.Errorf("while the transfer ran the lease came back: %v", duringIt)
	}
}
