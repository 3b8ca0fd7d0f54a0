package testnet

import (
	"net"
	"strconv"
	"testing"
)

func TestPorts_DistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	addrs, err := Ports("127.0.0.1", 20)
	if err != nil {
		t.Fatal(err)
	}
	_, hi := belowEphemeral()
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s handed out twice in %v", a, addrs)
		}
		seen[a] = true
		_, p, _ := net.SplitHostPort(a)
		if port, _ := strconv.Atoi(p); port < 10000 || port >= hi {
			t.Errorf("port %d outside [10000, %d)", port, hi)
		}
		ln, err := net.Listen("tcp", a) // free again once Ports returned
		if err != nil {
			t.Fatalf("%s is not free: %v", a, err)
		}
		ln.Close()
	}
}
