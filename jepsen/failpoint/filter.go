package failpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// The iptables partitions drop real packets between the nodes' loopback
// addresses. Each node listens on its own 127.a.b.x and dials its peers
// from it (lockd does so for loopback peers), so a rule matching source
// and destination address cuts one direction of one link, for every peer
// connection, whoever opened it. HTTP forwarding between nodes comes from
// 127.0.0.1 and is not cut (as with the transport hooks), nor are the
// harness's clients.
//
// "drop" rules answer with a TCP reset, so a new connection fails at once
// (as with the transport hooks' drop) while an open one stalls until its
// sender gives up; "blackhole" rules discard the packets silently.
//
// A one-way cut (iptables-oneway) cannot drop every packet of one
// direction: TCP needs the receiver's handshake replies and
// acknowledgements to come back, so dropping all of A's packets to B
// stops B's messages to A as well (measured: a leader cut that way
// received nothing from its followers either, exactly like
// iptables-leader). Its rules drop only the packets from A to B that
// carry data (a payload of at least one byte; the u32 and length matches
// compute it from the IP and TCP header lengths) and let A's SYNs, pure
// acknowledgements, FINs and resets through, so that connections open
// both ways and every byte B sends to A is delivered and acknowledged,
// while nothing A writes to B arrives: at the message level the cut is
// one-way, as the transport hooks' is (TestOneWayRules measures it on
// raw connections, TestFaultOneWay on a live cluster). With "drop" the
// first data packet A sends resets A's own end of that connection (the
// reset goes to A); "blackhole" leaves A retransmitting until it gives
// up.
//
// A fault's rules live in a chain of their own, jumped to from INPUT for
// loopback traffic, and healing removes the jump and the chain: nothing
// is left behind, and other rules of the machine are never touched.

// MissingTools reports what this host lacks for the faults fs, before a
// run: the iptables-* faults need root, the iptables command and a
// loopback address per node (127.a.b.x). nil when nothing is missing. A
// fault that cannot run would otherwise become a timeline note ("fault ...
// unavailable") in a run that passes: the harness fails the run instead
// (runner.Run), and its command first tries scripts/jepsen-deps.sh.
func MissingTools(fs []Failpoint) error {
	if NeedsDisks(fs) {
		if err := diskTools(); err != nil {
			return fmt.Errorf("fault disk-full: %w", err)
		}
	}
	var names []string
	for _, f := range fs {
		if p, ok := f.(*partition); ok && p.filter {
			names = append(names, f.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	if err := filterTools(); err != nil {
		return fmt.Errorf("faults %s: %w (scripts/jepsen-deps.sh installs iptables, as root with apt-get)", strings.Join(names, ", "), err)
	}
	return nil
}

// filterTools reports what the host lacks for iptables partitions: root,
// the iptables command, loopback addresses besides 127.0.0.1.
func filterTools() error {
	if os.Geteuid() != 0 {
		return errors.New("need root")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return errors.New("need the iptables command, which is not installed")
	}
	ln, err := net.Listen("tcp", "127.254.254.254:0")
	if err != nil {
		return fmt.Errorf("need loopback addresses besides 127.0.0.1 (127.a.b.x): %w", err)
	}
	return ln.Close()
}

// filterAvailable reports why the iptables partitions cannot run, or nil.
func filterAvailable(env *Env) error {
	if err := filterTools(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range env.Cluster.Nodes {
		if seen[n.IP] {
			return errors.New("needs a loopback address per node (127.a.b.x)")
		}
		seen[n.IP] = true
	}
	return nil
}

// chain is one fault's iptables rules.
type chain struct {
	name string
}

// RemoveStaleChains removes the chains (and their jumps) of harness
// processes that no longer run: a harness killed with SIGKILL during an
// iptables partition cannot heal it, and its rules would cut the next
// runs' nodes. It does nothing without root or iptables.
func RemoveStaleChains(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, "iptables", "-w", "-S").Output()
	if err != nil {
		return fmt.Errorf("iptables -S: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		name, ok := strings.CutPrefix(line, "-N ")
		if !ok {
			continue
		}
		pid, ok := strings.CutPrefix(name, chainPrefix)
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // its harness still runs (or its pid was reused: then the chain stays)
		}
		errs = append(errs, (&chain{name: name}).remove(ctx))
	}
	return errors.Join(errs...)
}

// chainPrefix starts every harness chain's name; the harness's pid ends it.
const chainPrefix = "LOCKD-JEPSEN-"

// chainName is this process's chain: runs of one harness process take
// turns, and harness processes running side by side have chains, and node
// addresses (see cluster.Node.IP), of their own.
func chainName() string { return fmt.Sprintf("%s%d", chainPrefix, os.Getpid()) }

// removeLeftoverChain removes this process's chain if a failed heal left
// it behind; it is not an error that there is none.
func removeLeftoverChain(ctx context.Context) error {
	c := &chain{name: chainName()}
	if c.run(ctx, "-n", "-L", c.name) != nil {
		return nil
	}
	return c.remove(ctx)
}

// filterRules returns the match and target of the rules for every link, in
// order, without duplicates: per direction of a link, one rule dropping
// every packet, or, with dataOnly, the rules dropping only the packets
// that carry data (see dataMatches).
func filterRules(links []link, rule string, dataOnly bool) [][]string {
	target := []string{"-j", "REJECT", "--reject-with", "tcp-reset"}
	if rule == "blackhole" {
		target = []string{"-j", "DROP"}
	}
	// A rule on node X against peer Y "in" cuts Y -> X; "out" cuts X -> Y.
	var out [][]string
	seen := map[[2]string]bool{}
	add := func(src, dst string) {
		k := [2]string{src, dst}
		if seen[k] {
			return
		}
		seen[k] = true
		base := []string{"-p", "tcp", "-s", src, "-d", dst}
		if !dataOnly {
			out = append(out, append(base, target...))
			return
		}
		for _, m := range dataMatches() {
			r := append(append(append([]string(nil), base...), m...), target...)
			out = append(out, r)
		}
	}
	for _, l := range links {
		if l.direction == "in" || l.direction == "both" {
			add(l.peer.IP, l.on.IP)
		}
		if l.direction == "out" || l.direction == "both" {
			add(l.on.IP, l.peer.IP)
		}
	}
	return out
}

// dataMatches returns one match per TCP header length (20 to 60 bytes, in
// steps of 4) for an IPv4 packet with a 20-byte header, as loopback
// packets have: the TCP header is that long and the packet longer than
// both headers, so it carries at least one byte of data. A last match
// takes any packet with IP options whose length passes the smallest
// headers: loopback traffic has none, and a rule that dropped a pure
// acknowledgement with options would only make the cut wider, never
// narrower.
func dataMatches() [][]string {
	var out [][]string
	for th := 20; th <= 60; th += 4 {
		out = append(out, []string{"-m", "u32", "--u32", fmt.Sprintf("0>>22&0x3C=20&&0>>22&0x3C@12>>26&0x3C=%d", th),
			"-m", "length", "--length", fmt.Sprintf("%d:65535", 20+th+1)})
	}
	return append(out, []string{"-m", "u32", "--u32", "0>>22&0x3C=24:60", "-m", "length", "--length", "45:65535"})
}

// newChain installs a chain with filterRules(links, rule, dataOnly) and the jump to
// it. On error it removes what it installed.
func newChain(ctx context.Context, links []link, rule string, dataOnly bool) (*chain, error) {
	c := &chain{name: chainName()}
	// A chain left by a run of this process that did not heal is reused.
	_ = c.run(ctx, "-N", c.name)
	if err := c.run(ctx, "-F", c.name); err != nil {
		return nil, err
	}
	for _, r := range filterRules(links, rule, dataOnly) {
		if err := c.run(ctx, append([]string{"-A", c.name}, r...)...); err != nil {
			_ = c.remove(ctx) // best effort: the error being returned is the one to report
			return nil, err
		}
	}
	if err := c.run(ctx, "-I", "INPUT", "-i", "lo", "-j", c.name); err != nil {
		_ = c.remove(ctx) // best effort: the error being returned is the one to report
		return nil, err
	}
	return c, nil
}

// remove deletes the jump and the chain. A nil chain has nothing to remove.
func (c *chain) remove(ctx context.Context) error {
	if c == nil {
		return nil
	}
	// Delete every jump (there is one unless an earlier heal failed).
	for c.run(ctx, "-D", "INPUT", "-i", "lo", "-j", c.name) == nil {
	}
	if err := c.run(ctx, "-F", c.name); err != nil {
		return err
	}
	return c.run(ctx, "-X", c.name)
}

func (c *chain) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
