package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"time"
)

// iptables isolates one node with real packet drops: it drops every TCP
// packet to or from the node's peer port on the loopback interface. All
// nodes share 127.0.0.1 and open their connections from ephemeral ports,
// so a rule can only name the port a node listens on: the fault cuts every
// connection the other nodes open to the victim, but not the connections
// the victim opens to them. It needs root and the iptables command.
type iptables struct {
	rules [][]string
}

func (f *iptables) Name() string { return "iptables-isolate" }

func (f *iptables) Available(context.Context, *Env) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return errors.New("needs the iptables command")
	}
	return nil
}

func (f *iptables) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	v := leaderOrAny(ctx, env, rng)
	if rng.IntN(2) == 0 {
		v = randomNode(env, rng, nil)
	}
	if v == nil {
		return "", errors.New("no running node")
	}
	port := v.Peer[strings.LastIndex(v.Peer, ":")+1:]
	f.rules = [][]string{
		{"INPUT", "-i", "lo", "-p", "tcp", "--dport", port, "-j", "DROP"},
		{"INPUT", "-i", "lo", "-p", "tcp", "--sport", port, "-j", "DROP"},
	}
	for _, r := range f.rules {
		if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("iptables: %v: %s", err, out)
		}
	}
	return "iptables: drop packets of " + v.ID + "'s peer port " + port, nil
}

func (f *iptables) Heal(ctx context.Context, _ *Env) error {
	var errs []error
	for _, r := range f.rules {
		if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-D"}, r...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables: %v: %s", err, out))
		}
	}
	f.rules = nil
	return errors.Join(errs...)
}

func (f *iptables) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, 500*time.Millisecond, env.TTL+3*time.Second)
}
