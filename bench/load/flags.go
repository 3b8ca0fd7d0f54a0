package load

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockd/lockd/api"
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
	batchDef := def.KeepaliveBatches
	if len(batchDef) == 0 {
		batchDef = []int{1}
	}
	batches := fs.String("keepalive-batch", joinInts(batchDef), "keepalive: comma-separated counts of sessions a caller renews in one request, a set of rows each (above 1: lockd's POST /v1/sessions/keepalive, etcd's KeepAlive stream; rows named keepalive-batch)")
	return func() (Config, error) {
		cfg := def
		cfg.Duration, cfg.Callers, cfg.TTL = *duration, *callers, *ttl
		if err := parseLists(intList{"keepalive-batch", *batches, &cfg.KeepaliveBatches}); err != nil {
			return cfg, err
		}
		for _, b := range cfg.KeepaliveBatches {
			if b < 1 || b > api.MaxKeepAliveIDs {
				return cfg, fmt.Errorf("--keepalive-batch %d: give 1 to %d", b, api.MaxKeepAliveIDs)
			}
		}
		return cfg, parseLists(intList{"workers", *workers, &cfg.Workers}, intList{"waiters", *waiters, &cfg.Waiters},
			intList{"sessions", *sessions, &cfg.Sessions})
	}
}

// ScaleFlags registers the waiters and watchers rows' flags on fs
// (--queue, --watchers, --setup-timeout), with def's values as defaults.
// After fs.Parse, the function it returns puts the flags' values into a
// Config, or returns an error that names the flag at fault.
func ScaleFlags(fs *flag.FlagSet, def Config) func(Config) (Config, error) {
	queue := fs.String("queue", joinInts(def.Queue), "waiters: comma-separated queue depths (sessions queued on one lock)")
	watchers := fs.String("watchers", joinInts(def.Watchers), "watchers: comma-separated counts of blocking queries (a row of 0 comes first unless named)")
	setup := fs.Duration("setup-timeout", def.SetupTimeout, "waiters, watchers: bound on a row's setup; a row past it is measured as far as it got")
	return func(cfg Config) (Config, error) {
		cfg.SetupTimeout = *setup
		return cfg, parseLists(intList{"queue", *queue, &cfg.Queue}, intList{"watchers", *watchers, &cfg.Watchers})
	}
}

// intList is a flag's comma-separated list of counts and where it goes.
type intList struct {
	flag string
	in   string
	out  *[]int
}

// parseLists parses each list into its place, and names the flag of the
// first that is not a list of counts.
func parseLists(ls ...intList) error {
	for _, l := range ls {
		ns, err := parseInts(l.in)
		if err != nil {
			return fmt.Errorf("--%s: %w", l.flag, err)
		}
		*l.out = ns
	}
	return nil
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

// KVFlags registers the kv rows' own flags on fs (--fanout, --hot-keys,
// --value-size), with def's values as defaults; the kv rows also take
// --workers and --setup-timeout. After fs.Parse, the function it returns
// puts the flags' values into a Config, or returns an error that names
// the flag at fault.
func KVFlags(fs *flag.FlagSet, def Config) func(Config) (Config, error) {
	fanout := fs.String("fanout", joinInts(def.Fanout), "kv: comma-separated counts of watchers of one key (kv-watch rows; none: no such rows)")
	hot := fs.Int("hot-keys", def.HotKeys, "kv: keys the kv-cas rows' workers share")
	size := fs.Int("value-size", def.ValueSize, "kv: bytes in each value put")
	return func(cfg Config) (Config, error) {
		cfg.HotKeys, cfg.ValueSize = *hot, *size
		return cfg, parseLists(intList{"fanout", *fanout, &cfg.Fanout})
	}
}

// KVScaleFlags registers the kv-scale run's own flags on fs (--keys,
// --batch, --writers, --put-rate, --snapshot-window, --stale,
// --watch-rate), with def's
// values as defaults; the run also takes --value-size, --watchers,
// --duration and --setup-timeout. After fs.Parse, the function it
// returns puts the flags' values into a Config.
func KVScaleFlags(fs *flag.FlagSet, def Config) func(Config) Config {
	keys := fs.Int("keys", def.Keys, "kv-scale: keys written first")
	batch := fs.Int("batch", def.Batch, "kv-scale: puts to a transaction while the keys are written (1: a plain put each)")
	writers := fs.Int("writers", def.Writers, "kv-scale: writers at once, while the keys are written and in the puts during snapshots")
	rate := fs.Float64("put-rate", def.PutRate, "kv-scale: puts a second, in all, during snapshots")
	window := fs.Duration("snapshot-window", def.SnapshotWindow, "kv-scale: how long the puts during snapshots run (0: no such rows)")
	stale := fs.Bool("stale", def.Stale, "kv-scale: watch with ?stale (each node answers its own watches) instead of through the leader")
	watchRate := fs.Float64("watch-rate", def.WatchRate, "kv-scale: watches sent a second while they are set up")
	return func(cfg Config) Config {
		cfg.Keys, cfg.Batch, cfg.Writers, cfg.PutRate, cfg.SnapshotWindow, cfg.Stale = *keys, *batch, *writers, *rate, *window, *stale
		cfg.WatchRate = *watchRate
		return cfg
	}
}
