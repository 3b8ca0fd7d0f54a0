package main

import (
	"testing"

	"github.com/lockd/lockd/internal/cli"
)

func TestRun_BadArgumentsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"locks", "--workers", "1,x"},
		{"handoff", "--waiters", "0"},
		{"keepalive", "--ttl", "1s"},
		{"serving", "--duration", "0s"},
		{"locks", "extra"},
		{"frobnicate"},
		{"elections", "--n", "2"},
		{"failover", "--nodes", "4"},
		{"kv", "--fanout", "0"},
		{"kv", "--hot-keys", "0"},
		{"kv", "--value-size", "-1"},
		{"kv", "--fanout", "x"},
		{"kv-scale", "--keys", "0"},
		{"kv-scale", "--batch", "129"},
		{"kv-scale", "--put-rate", "0"},
		{"kv-scale", "--writers", "0"},
	} {
		if got := run(args); got != cli.ExitUsage {
			t.Errorf("%q exit = %d, want %d", args, got, cli.ExitUsage)
		}
	}
	if got := run([]string{"--help"}); got != cli.ExitOK {
		t.Errorf("--help exit = %d, want %d", got, cli.ExitOK)
	}
}
