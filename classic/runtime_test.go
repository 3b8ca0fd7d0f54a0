package classic

import (
	"errors"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/mux"
)

const (
	// testTimeout bounds anything a runtime test waits for.
	testTimeout = 10 * time.Second
	// pollEvery is how often a runtime test looks at the nodes.
	pollEvery = 10 * time.Millisecond
)

// testTiming is fast enough for loopback and slack enough for -race.
func testTiming() Timing {
	return Timing{
		HeartbeatInterval:  20 * time.Millisecond,
		SuspectTimeout:     200 * time.Millisecond,
		ElectedTimeout:     400 * time.Millisecond,
		AnswerTimeout:      80 * time.Millisecond,
		CoordinatorTimeout: 250 * time.Millisecond,
		CheckInterval:      100 * time.Millisecond,
		MergeDelay:         40 * time.Millisecond,
		ReplyTimeout:       80 * time.Millisecond,
	}
}

// testNode is one lockd node's share of a runtime test: its mux and its
// elector.
type testNode struct {
	id   string
	mux  *mux.Mux
	node *Node
}

// testPool is the emergent pool for runtime tests: the test timing's
// pace, limits 2 and 3.
func testPool() Pool {
	return Pool{Lower: 2, Upper: 3, SlaveHeartbeatInterval: 50 * time.Millisecond,
		SlaveTimeout: 200 * time.Millisecond, TriggerJitter: 100 * time.Millisecond, MissedHeartbeats: 3}
}

// textbookAlgorithms are the algorithms whose runtime tests below expect
// the textbook outcome (the highest id, or one group); the emergent
// algorithm has its own (emergent_test.go).
var textbookAlgorithms = []Algorithm{Ring, Bully, Invitation}

// mustStartCluster starts n nodes n1..nN running alg over internal/mux on
// 127.0.0.1, with ports from the OS, and closes them when the test ends.
func mustStartCluster(t *testing.T, alg Algorithm, n int) []*testNode {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	nodes := make([]*testNode, n)
	addrs := make(map[string]string, n)
	layers := make([]*mux.Layer, n)
	members := make([]string, n)
	for i := range nodes {
		id := SimID(i + 1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		m := mux.New(ln, id, logger)
		served := make(chan error, 1)
		go func() { served <- m.Serve() }()
		t.Cleanup(func() {
			_ = m.Close()
			if err := <-served; !errors.Is(err, mux.ErrClosed) {
				t.Errorf("%s: Serve returned %v", id, err)
			}
		})
		nodes[i] = &testNode{id: id, mux: m}
		layers[i] = m.Listen(alg.Proto())
		addrs[id] = ln.Addr().String()
		members[i] = id
	}
	for i, tn := range nodes {
		peers := make(map[string]string)
		for id, a := range addrs {
			tn.mux.Faults().SetPeerAddr(id, a)
			if id != tn.id {
				peers[id] = a
			}
		}
		cfg := Config{ID: tn.id, Members: members, Algorithm: alg, Timing: testTiming(), Pool: testPool(), Logger: logger}
		node, err := NewNode(cfg, NewMuxTransport(layers[i], peers, logger))
		if err != nil {
			t.Fatalf("NewNode: %v", err)
		}
		tn.node = node
		t.Cleanup(func() { _ = node.Close() })
	}
	for _, tn := range nodes {
		if err := tn.node.Start(); err != nil {
			t.Fatalf("%s: Start: %v", tn.id, err)
		}
	}
	return nodes
}

// waitFor polls cond until it holds or testTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pollEvery)
	}
}

// agreeOn reports whether all the nodes know the same coordinator, which
// is want (or any coordinator among the nodes, if want is empty).
func agreeOn(nodes []*testNode, want string) bool {
	first, _, ok := nodes[0].node.Coordinator()
	if !ok || (want != "" && first != want) {
		return false
	}
	if want == "" && !slices.ContainsFunc(nodes, func(n *testNode) bool { return n.id == first }) {
		return false
	}
	for _, n := range nodes[1:] {
		if c, _, ok := n.node.Coordinator(); !ok || c != first {
			return false
		}
	}
	return true
}

// cut partitions a from b with Drop rules both ways on both muxes.
func cut(a, b *testNode) {
	a.mux.Faults().Set(b.id, mux.Both, mux.Drop)
	b.mux.Faults().Set(a.id, mux.Both, mux.Drop)
}

func heal(a, b *testNode) {
	a.mux.Faults().Heal(b.id)
	b.mux.Faults().Heal(a.id)
}

// expect returns the coordinator a test can demand of alg: ring and bully
// elect the highest id, invitation whoever invited first (any one of the
// group, which agreeOn checks when given "").
func expect(alg Algorithm, highest string) string {
	if alg == Invitation {
		return ""
	}
	return highest
}

// TestNode_ElectsOverMux runs each algorithm on three real nodes over
// internal/mux: they elect the highest (invitation: one of them); when the
// coordinator is closed the other two elect the next highest (invitation:
// one of those two).
func TestNode_ElectsOverMux(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	for _, alg := range textbookAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			nodes := mustStartCluster(t, alg, 3)
			waitFor(t, "all three to agree", func() bool { return agreeOn(nodes, expect(alg, "n3")) })

			st := nodes[0].node.Stats()
			if st.Sent[KindElection]+st.Sent[KindProbe] == 0 || st.ElectionMessages() == 0 {
				t.Errorf("n1 sent no election messages: %+v", st)
			}

			coord, _, _ := nodes[0].node.Coordinator()
			leader := nodes[slices.IndexFunc(nodes, func(n *testNode) bool { return n.id == coord })]
			rest := slices.DeleteFunc(slices.Clone(nodes), func(n *testNode) bool { return n == leader })
			if err := leader.node.Close(); err != nil {
				t.Fatalf("close %s: %v", leader.id, err)
			}
			_ = leader.mux.Close()
			waitFor(t, "the other two to agree", func() bool {
				return agreeOn(rest, expect(alg, rest[1].id))
			})
			// The new coordinator's messages to the closed one fail to dial.
			next, _, _ := rest[0].node.Coordinator()
			i := slices.IndexFunc(rest, func(n *testNode) bool { return n.id == next })
			waitFor(t, next+" to report messages lost", func() bool { return rest[i].node.Stats().Lost > 0 })
		})
	}
}

// TestNode_PartitionOverMux cuts n3 off from n1 and n2 with mux Drop
// rules both ways. Ring and bully then have two coordinators at once, n3
// and n2; invitation has two groups, {n3} and {n1, n2}, each with its own
// coordinator. After the heal all three agree again (ring and bully on
// n3).
func TestNode_PartitionOverMux(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	for _, alg := range textbookAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			nodes := mustStartCluster(t, alg, 3)
			n1, n2, n3 := nodes[0], nodes[1], nodes[2]
			waitFor(t, "all three to agree", func() bool { return agreeOn(nodes, "") })

			cut(n3, n1)
			cut(n3, n2)
			waitFor(t, "two coordinators at once", func() bool {
				c3, _, ok3 := n3.node.Coordinator()
				return ok3 && c3 == "n3" && agreeOn(nodes[:2], expect(alg, "n2"))
			})
			if alg == Invitation {
				if g := n3.node.Stats().Group; !slices.Equal(g, []string{"n3"}) {
					t.Errorf("n3's group = %v, want [n3]", g)
				}
			}

			heal(n3, n1)
			heal(n3, n2)
			waitFor(t, "agreement after the heal", func() bool { return agreeOn(nodes, expect(alg, "n3")) })
		})
	}
}

// TestNode_ChangesAndClose checks that Changes reports the coordinator,
// and that Close closes it and is safe to repeat.
func TestNode_ChangesAndClose(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	nodes := mustStartCluster(t, Bully, 2)
	n1 := nodes[0].node
	deadline := time.After(testTimeout)
	for got := false; !got; {
		select {
		case c := <-n1.Changes():
			got = c.OK && c.Coordinator == "n2"
		case <-deadline:
			t.Fatal("no change to n2 reported")
		}
	}
	if err := n1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := n1.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for range n1.Changes() {
	}
	if err := n1.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}
