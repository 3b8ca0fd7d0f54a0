package server_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/test/servertest"
)

type testRaftLayer struct{ *mux.Layer }

func (l testRaftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.Layer.Dial(string(addr), timeout)
}

// outsider returns a Raft transport on its own peer port, dialing as id.
func outsider(t *testing.T, id string) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mux.New(ln, id, nil)
	go func() { _ = m.Serve() }()
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: testRaftLayer{m.Listen(mux.ProtoRaft)}, MaxPool: 1, Timeout: 2 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
	})
	t.Cleanup(func() { _ = tr.Close(); _ = m.Close() })
	return tr
}

// A TimeoutNow makes a follower start an election that the others vote in
// even while they know a leader, and it carries no term. A follower must
// obey one only from the leader it follows: one that an earlier leader sent
// and the network delayed would otherwise end the current leader's term
// while its master lease runs.
func TestCluster_TimeoutNowOnlyFromTheCurrentLeader(t *testing.T) {
	c := servertest.New(t, 3)
	l := c.WaitLeader()
	f := c.Follower(l)
	leader, target := c.Nodes[l], c.Nodes[f]
	term := leader.Node().Raft().CurrentTerm()
	send := func(from string) error {
		tr := outsider(t, from)
		req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
			ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from), Addr: []byte(tr.LocalAddr()),
		}}
		return tr.TimeoutNow(raft.ServerID(target.ID()), raft.ServerAddress(target.PeerAddr()), req, &raft.TimeoutNowResponse{})
	}

	other := c.Nodes[3-l-f].ID()
	if err := send(other); err == nil {
		t.Fatal("a TimeoutNow from a node that does not lead was obeyed")
	}
	time.Sleep(300 * time.Millisecond)
	if got := leader.Node().Raft().CurrentTerm(); got != term || leader.Node().Raft().State() != raft.Leader {
		t.Fatalf("after a refused TimeoutNow: leader in term %d, state %v; want term %d, still leader", got, leader.Node().Raft().State(), term)
	}

	// The same request in the leader's name is refused too while the
	// leader has not released this follower for the term (a leader
	// releases its followers only after it gave its lease up, just before
	// its own TimeoutNow); the leader's own transfer goes through.
	if err := send(leader.ID()); err == nil {
		t.Fatal("a TimeoutNow in the leader's name, without its release, was obeyed")
	}
	if got := leader.Node().Raft().CurrentTerm(); got != term || leader.Node().Raft().State() != raft.Leader {
		t.Fatalf("after a refused TimeoutNow: leader in term %d, state %v; want term %d, still leader", got, leader.Node().Raft().State(), term)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := leader.Node().TransferLeadership(ctx, target.ID())
	if err != nil {
		t.Fatalf("the leader's own transfer: %v", err)
	}
	if res.Leader.ID != target.ID() {
		t.Fatalf("after the transfer %q leads, want %q", res.Leader.ID, target.ID())
	}
}
