// Package testnet hands out listen addresses for the processes that tests
// and the fault harness start.
//
// Asking the OS for a port (listen on port 0, then close) is racy in two
// ways when the port is used later by another process: two asks can return
// the same port, and while a node is down between a kill and its restart,
// any outgoing connection on the machine may take its port as a local
// ephemeral port. Ports returns distinct ports from below the kernel's
// ephemeral range, which outgoing connections never use.
package testnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports returns n distinct host:port addresses on ip that were free just
// now, with ports below the ephemeral range.
func Ports(ip string, n int) ([]string, error) {
	lo, hi := belowEphemeral()
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("testnet: no %d free ports on %s in %d..%d", n, ip, lo, hi)
		}
		port := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		held = append(held, ln) // held until every port is chosen: all distinct
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// belowEphemeral returns a port range under the ephemeral one: [10000,
// start of the ephemeral range), or [10000, 32768) when the range cannot
// be read (Linux's default starts at 32768).
func belowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	if start, err := ephemeralStart(); err == nil && start > lo+1000 {
		hi = start
	}
	return lo, hi
}

func ephemeralStart() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, errors.New("testnet: unexpected ip_local_port_range")
	}
	return strconv.Atoi(f[0])
}
