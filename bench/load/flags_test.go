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
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rows := load.RowFlags(fs, load.DefaultConfig())
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
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
}
