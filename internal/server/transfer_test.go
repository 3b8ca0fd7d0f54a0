package server_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/internal/servertest"
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

	// The same request in the leader's name is obeyed: the check does not
	// break leadership transfers.
	if err := send(leader.ID()); err != nil {
		t.Fatalf("TimeoutNow in the leader's name refused: %v", err)
	}
	servertest.WaitFor(t, 5*time.Second, "an election after the leader's TimeoutNow", func() bool {
		return target.Node().Raft().CurrentTerm() > term
	})
}
