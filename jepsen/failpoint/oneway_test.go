package failpoint

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// filterMu serializes the tests' iptables rules: every fault of one
// process uses the same chain (chainName).
var filterMu sync.Mutex

// holdFilter takes the chain for the rest of the test.
func holdFilter(t *testing.T) {
	filterMu.Lock()
	t.Cleanup(filterMu.Unlock)
}

// needFilter fails the test unless iptables partitions can run here: a
// campaign runs the iptables-* faults, so a machine that cannot must not
// pass their tests by skipping them. With CI set (a CI machine without
// root) it skips instead.
func needFilter(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: iptables faults run on live clusters")
	}
	if err := filterTools(); err != nil {
		missingTool(t, "iptables faults: "+err.Error()+" (scripts/jepsen-deps.sh installs iptables, as root with apt-get)")
	}
}

// missingTool fails the test for a tool the campaign would use that this
// machine lacks, or skips it where the environment variable CI is set.
func missingTool(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Skip(why + " (CI is set: skipped)")
	}
	t.Fatal(why + " (set CI=1 to skip instead)")
}

// probeAddrs returns two loopback addresses of this process's own, or
// fails the test (skips it with CI set) where the machine has no loopback
// address but 127.0.0.1.
func probeAddrs(t *testing.T) (string, string) {
	t.Helper()
	pid := os.Getpid()
	a := fmt.Sprintf("127.%d.%d.200", 1+pid%254, pid/254%256)
	b := fmt.Sprintf("127.%d.%d.201", 1+pid%254, pid/254%256)
	for _, ip := range []string{a, b} {
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			missingTool(t, fmt.Sprintf("no loopback address %s: %v", ip, err))
		}
		ln.Close()
	}
	return a, b
}

// delivers reports whether a message that from writes on a TCP connection
// between from and to reaches to, on a connection from dials and on one to
// dials: two measurements. A connection that cannot be opened delivers
// nothing.
func delivers(t *testing.T, from, to string) (fromDials, toDials bool) {
	t.Helper()
	return deliversOn(t, from, to, true), deliversOn(t, from, to, false)
}

func deliversOn(t *testing.T, from, to string, fromDials bool) bool {
	t.Helper()
	lnIP, dialIP := to, from
	if !fromDials {
		lnIP, dialIP = from, to
	}
	ln, err := net.Listen("tcp", lnIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(dialIP)}, Timeout: 500 * time.Millisecond}
	dialed, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		return false
	}
	defer dialed.Close()
	var other net.Conn
	select {
	case c, ok := <-accepted:
		if !ok {
			return false
		}
		other = c
	case <-time.After(time.Second):
		return false
	}
	defer other.Close()
	w, r := dialed, other
	if !fromDials {
		w, r = other, dialed
	}
	msg := []byte("one message\n")
	if _, err := w.Write(msg); err != nil {
		return false
	}
	r.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	got := make([]byte, len(msg))
	_, err = io.ReadFull(r, got)
	return err == nil && string(got) == string(msg)
}

// TestOneWayRules measures the iptables rules of a one-way cut from a to b
// on raw TCP connections between two loopback addresses: with the rules
// that drop every packet from a to b, b's messages to a do not arrive
// either (connections cannot even open), which is why iptables-oneway
// drops only a's data packets; with those, b's messages to a arrive on
// connections either end opened, and a's to b never do.
func TestOneWayRules(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	needFilter(t)
	t.Parallel()
	ipA, ipB := probeAddrs(t)
	holdFilter(t)
	a, b := &proccluster.Node{ID: "a", IP: ipA}, &proccluster.Node{ID: "b", IP: ipB}
	ctx := context.Background()
	if ab, ba := delivers(t, ipA, ipB); !ab || !ba {
		t.Fatalf("a -> b without rules: delivered %v (a dials), %v (b dials)", ab, ba)
	}
	for _, rule := range []string{"drop", "blackhole"} {
		for _, dataOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/data-only=%v", rule, dataOnly), func(t *testing.T) {
				c, err := newChain(ctx, []link{{a, b, "out"}}, rule, dataOnly)
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := c.remove(ctx); err != nil {
						t.Error(err)
					}
				}()
				ab1, ab2 := delivers(t, ipA, ipB)
				ba1, ba2 := delivers(t, ipB, ipA)
				t.Logf("a -> b delivered: %v (a dials), %v (b dials); b -> a: %v (b dials), %v (a dials)", ab1, ab2, ba1, ba2)
				if ab1 || ab2 {
					t.Errorf("a message from a reached b across the cut")
				}
				if dataOnly && !(ba1 && ba2) {
					t.Errorf("the one-way cut stopped b's messages to a")
				}
				if !dataOnly && (ba1 || ba2) {
					t.Errorf("with every packet from a dropped, b's message reached a: the measurement that motivates data-only rules changed")
				}
			})
		}
	}
	if ab, ba := delivers(t, ipA, ipB); !ab || !ba {
		t.Fatalf("a -> b after the rules' removal: delivered %v (a dials), %v (b dials)", ab, ba)
	}
}
