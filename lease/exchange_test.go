package lease

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpLayer is a Layer over plain loopback TCP: each follower listens on its
// own port and Dial goes straight to the address it is given.
type tcpLayer struct{ net.Listener }

func (l tcpLayer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

func mustTCPLayer(t *testing.T) tcpLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return tcpLayer{ln}
}

// follower starts the answering side of an exchange with promise p and
// returns its address.
func follower(t *testing.T, p promiser) string {
	t.Helper()
	l := mustTCPLayer(t)
	x := newExchange(l, p)
	x.serve()
	t.Cleanup(x.close)
	return l.Addr().String()
}

func TestExchange_FramesRoundTrip(t *testing.T) {
	var b bytes.Buffer
	req := promiseRequest{seq: 7, term: 1 << 40, leader: "n3"}
	if err := writeRequest(&b, req); err != nil {
		t.Fatal(err)
	}
	got, err := readRequest(&b)
	if err != nil || got != req {
		t.Fatalf("request round trip: %+v, %v", got, err)
	}
	ans := promiseAnswer{seq: 9, remaining: -3 * time.Millisecond, applied: 1<<33 + 5}
	if err := writeAnswer(&b, ans); err != nil {
		t.Fatal(err)
	}
	if got, err := readAnswer(&b); err != nil || got != ans {
		t.Fatalf("answer round trip: %+v, %v", got, err)
	}
	if err := writeRequest(&b, promiseRequest{leader: ""}); err == nil {
		t.Fatal("empty leader id accepted")
	}
}

func TestExchange_RoundTakesTheQuorumsSmallestPromise(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]uint64{}
	promise := func(name string, rem time.Duration) promiser {
		return func(term uint64, leader string) time.Duration {
			mu.Lock()
			asked[name] = term
			mu.Unlock()
			if leader != "L" {
				return 0
			}
			return rem
		}
	}
	peers := []string{
		follower(t, promise("a", 300*time.Millisecond)),
		follower(t, promise("b", 450*time.Millisecond)),
		follower(t, promise("c", 0)), // follows someone else: no promise
	}
	x := newExchange(mustTCPLayer(t), nil)
	defer x.close()
	got, err := x.round(peers, "L", 5, 2, time.Now().Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 300*time.Millisecond || got[1] != 450*time.Millisecond {
		t.Fatalf("round = %v, want [300ms 450ms]", got)
	}
	mu.Lock()
	if asked["a"] != 5 || asked["b"] != 5 {
		t.Fatalf("followers were asked about terms %v, want 5", asked)
	}
	mu.Unlock()
	// Three promises cannot be had from these peers.
	if _, err := x.round(peers, "L", 5, 3, time.Now().Add(2*time.Second)); err == nil {
		t.Fatal("round counted a follower that gave no promise")
	}
	// Asked as another leader, nobody promises.
	if _, err := x.round(peers, "M", 5, 1, time.Now().Add(2*time.Second)); err == nil {
		t.Fatal("followers promised to a node they do not follow")
	}
}

// A follower whose answer comes after the round's deadline counts for
// nothing, and the late answer is not taken for the next round's.
func TestExchange_LateAnswerIsNotCounted(t *testing.T) {
	release := make(chan struct{})
	var calls sync.Mutex
	n := 0
	slow := follower(t, func(uint64, string) time.Duration {
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			<-release // the first answer is held back
			return 400 * time.Millisecond
		}
		return 200 * time.Millisecond
	})
	x := newExchange(mustTCPLayer(t), nil)
	defer x.close()
	if _, err := x.round([]string{slow}, "L", 1, 1, time.Now().Add(100*time.Millisecond)); err == nil {
		t.Fatal("round succeeded without an answer in time")
	}
	close(release)
	got, err := x.round([]string{slow}, "L", 1, 1, time.Now().Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 200*time.Millisecond {
		t.Fatalf("second round got promise %v: the first round's late answer was taken for it", got[0])
	}
}

func TestExchange_NoPeersNeeded(t *testing.T) {
	x := newExchange(mustTCPLayer(t), nil)
	defer x.close()
	if got, err := x.round(nil, "L", 1, 0, time.Now().Add(time.Second)); err != nil || got != nil {
		t.Fatalf("single-node round: %v, %v", got, err)
	}
	if _, err := x.round(nil, "L", 1, 1, time.Now().Add(time.Second)); err == nil {
		t.Fatal("round with no peers met a need of one")
	}
}

// A probe counts for no round, but keeps the peer's last contact and the
// applied index it reports.
func TestExchange_ProbeRecordsAppliedIndex(t *testing.T) {
	l := mustTCPLayer(t)
	fx := newExchange(l, func(uint64, string) time.Duration { return 300 * time.Millisecond })
	fx.applied = func() uint64 { return 42 }
	fx.serve()
	t.Cleanup(fx.close)
	addr := l.Addr().String()
	x := newExchange(mustTCPLayer(t), nil)
	defer x.close()
	if applied, at := x.peerApplied(addr); applied != 0 || !at.IsZero() {
		t.Fatalf("before any probe: applied %d at %v", applied, at)
	}
	x.probe([]string{addr}, "L", 1, time.Now().Add(2*time.Second))
	deadline := time.Now().Add(2 * time.Second)
	for {
		applied, at := x.peerApplied(addr)
		if applied == 42 && !at.IsZero() && !x.lastPromise(addr).IsZero() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a probe: applied %d at %v, want 42 at a recent time", applied, at)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
