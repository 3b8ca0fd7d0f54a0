package load_test

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
)

func TestRowFlags(t *testing.T) {
	parse := func(args ...string) (load.Config, error) {
		var rows func() (load.Config, error)
		parseFlags(t, args, func(fs *flag.FlagSet) { rows = load.RowFlags(fs, load.DefaultConfig()) })
		return rows()
	}
	cfg, err := parse()
	if def := load.DefaultConfig(); err != nil || !slices.Equal(cfg.Workers, def.Workers) || cfg.TTL != def.TTL {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = parse("--workers", "1, 2", "--sessions", "7", "--ttl", "5s", "--callers", "3", "--duration", "2s")
	if err != nil || !slices.Equal(cfg.Workers, []int{1, 2}) || !slices.Equal(cfg.Sessions, []int{7}) ||
		cfg.TTL != 5*time.Second || cfg.Callers != 3 || cfg.Duration != 2*time.Second {
		t.Errorf("parsed: %+v, %v", cfg, err)
	}
	cfg, err = parse("--workers", "none", "--waiters", "none")
	if err != nil || len(cfg.Workers) != 0 || len(cfg.Waiters) != 0 || cfg.Validate() != nil && !strings.Contains(cfg.Validate().Error(), "endpoints") {
		t.Errorf("none: %+v, %v", cfg, err)
	}
	if _, err := parse("--waiters", "2,x"); err == nil || !strings.HasPrefix(err.Error(), `--waiters: "x" is not a number`) {
		t.Errorf("bad list: %v", err)
	}
	if cfg, err := parse(); err != nil || !slices.Equal(cfg.KeepaliveBatches, []int{1}) {
		t.Errorf("default keepalive batches %v, %v: want one set of rows, one session a request", cfg.KeepaliveBatches, err)
	}
	if cfg, err := parse("--keepalive-batch", "1,64"); err != nil || !slices.Equal(cfg.KeepaliveBatches, []int{1, 64}) {
		t.Errorf("--keepalive-batch 1,64: %v, %v", cfg.KeepaliveBatches, err)
	}
	for _, bad := range []string{"0", "1001"} {
		if _, err := parse("--keepalive-batch", bad); err == nil || !strings.Contains(err.Error(), "give 1 to 1000") {
			t.Errorf("--keepalive-batch %s: %v, want it refused", bad, err)
		}
	}
}

func TestKVFlags(t *testing.T) {
	parse := func(args ...string) (load.Config, error) {
		var kv func(load.Config) (load.Config, error)
		parseFlags(t, args, func(fs *flag.FlagSet) { kv = load.KVFlags(fs, load.DefaultConfig()) })
		return kv(load.DefaultConfig())
	}
	cfg, err := parse()
	if err != nil || !slices.Equal(cfg.Fanout, []int{1000}) || cfg.HotKeys != 4 || cfg.ValueSize != 1024 {
		t.Errorf("defaults: fanout %v, hot keys %d, value size %d, %v", cfg.Fanout, cfg.HotKeys, cfg.ValueSize, err)
	}
	cfg, err = parse("--fanout", "10,100", "--hot-keys", "2", "--value-size", "0")
	if err != nil || !slices.Equal(cfg.Fanout, []int{10, 100}) || cfg.HotKeys != 2 || cfg.ValueSize != 0 {
		t.Errorf("parsed: fanout %v, hot keys %d, value size %d, %v", cfg.Fanout, cfg.HotKeys, cfg.ValueSize, err)
	}
	if _, err := parse("--fanout", "x"); err == nil || !strings.HasPrefix(err.Error(), `--fanout: "x" is not a number`) {
		t.Errorf("bad list: %v", err)
	}
}

// parseFlags registers flags on a new flag set and parses args with it.
func parseFlags(t *testing.T, args []string, register func(*flag.FlagSet)) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
}
