//go:build !lockd_unsafe

package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// A default build's "lockd serve" knows no unsafe flag: not on the command
// line, not from the environment, not in its help.
func TestServeFlags_NoUnsafeFlagsInADefaultBuild(t *testing.T) {
	for _, name := range []string{"unsafe-debug", "unsafe-fault-injection"} {
		if _, err := parseServe(t, []string{"--" + name, "true"}, nil); err == nil {
			t.Errorf("--%s accepted", name)
		}
	}
	cfg := mustServeConfig(t, nil, map[string]string{"LOCKD_UNSAFE_DEBUG": "grant-held", "LOCKD_UNSAFE_FAULT_INJECTION": "true"})
	if cfg.UnsafeFaults || cfg.Node.NoBootWait {
		t.Fatalf("the environment turned an unsafe flag on: faults %v, no-boot-wait %v", cfg.UnsafeFaults, cfg.Node.NoBootWait)
	}
	fs := flag.NewFlagSet("lockd serve", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	new(serveFlags).register(fs)
	fs.PrintDefaults()
	if strings.Contains(strings.ToLower(help.String()), "unsafe") {
		t.Fatalf("lockd serve's help mentions an unsafe flag:\n%s", help.String())
	}
}
