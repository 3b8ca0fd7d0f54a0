package load

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// RowFlags registers the rows' flags on fs (--duration, --workers,
// --waiters, --sessions, --callers, --ttl), with def's values as defaults.
// After fs.Parse, the function it returns gives def with the flags'
// values in it, or an error that names the flag at fault.
func RowFlags(fs *flag.FlagSet, def Config) func() (Config, error) {
	duration := fs.Duration("duration", def.Duration, "measured time of each row")
	workers := fs.String("workers", joinInts(def.Workers), "locks: comma-separated worker counts (none: no locks rows)")
	waiters := fs.String("waiters", joinInts(def.Waiters), "handoff: comma-separated waiter counts (none: no handoff rows)")
	sessions := fs.String("sessions", joinInts(def.Sessions), "keepalive: comma-separated session counts (none: no keepalive rows)")
	callers := fs.Int("callers", def.Callers, "keepalive: callers that create and renew the sessions")
	ttl := fs.Duration("ttl", def.TTL, "keepalive: the sessions' TTL")
	return func() (Config, error) {
		cfg := def
		cfg.Duration, cfg.Callers, cfg.TTL = *duration, *callers, *ttl
		for _, l := range []struct {
			flag string
			in   string
			out  *[]int
		}{{"workers", *workers, &cfg.Workers}, {"waiters", *waiters, &cfg.Waiters}, {"sessions", *sessions, &cfg.Sessions}} {
			ns, err := parseInts(l.in)
			if err != nil {
				return cfg, fmt.Errorf("--%s: %v", l.flag, err)
			}
			*l.out = ns
		}
		return cfg, nil
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// parseInts parses a comma-separated list of counts; "none" is the empty
// list, which runs no rows of that kind.
func parseInts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "none" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
