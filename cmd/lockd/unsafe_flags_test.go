//go:build lockd_unsafe

package main

import (
	"strings"
	"testing"

	"github.com/lockd/lockd/lease"
)

func TestUnsafeServeFlags_DebugSwitches(t *testing.T) {
	cfg := mustServeConfig(t, []string{"--unsafe-debug", "stale-reads,no-boot-wait,grant-held,no-session-grace"}, nil)
	u := cfg.Node.Unsafe
	if !u.StaleReads || !u.GrantHeld || !u.NoSessionGrace || !cfg.Node.NoBootWait {
		t.Fatalf("switches not all set: %+v no-boot-wait %v", u, cfg.Node.NoBootWait)
	}
	if cfg := mustServeConfig(t, nil, nil); cfg.Node.Unsafe != (lease.Unsafe{}) || cfg.Node.NoBootWait {
		t.Fatal("unsafe switches on by default")
	}
}

func TestUnsafeServeFlags_LockSwitches(t *testing.T) {
	cfg := mustServeConfig(t, []string{"--unsafe-debug", "lower-token,early-lock-delay,break-fifo"}, nil)
	if u := cfg.Node.Unsafe; !u.LowerToken || !u.EarlyLockDelay || !u.BreakFIFO {
		t.Fatalf("switches not all set: %+v", u)
	}
}

// Every switch --unsafe-debug knows sets something, and a name it does
// not know is refused with the list of those it does.
func TestUnsafeServeFlags_EverySwitchSetsSomething(t *testing.T) {
	for _, s := range unsafeDebugSwitches {
		if cfg := mustServeConfig(t, []string{"--unsafe-debug", s.name}, nil); cfg.Node.Unsafe == (lease.Unsafe{}) && !cfg.Node.NoBootWait {
			t.Errorf("--unsafe-debug %s sets nothing", s.name)
		}
	}
	f, err := parseServe(t, []string{"--unsafe-debug", "stale-reads,fast-mode"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := f.logger()
	if _, err := f.config(logger); err == nil || !strings.Contains(err.Error(), "unknown switch") || !strings.Contains(err.Error(), "stale-lag") {
		t.Fatalf("unknown switch: error = %v", err)
	}
}

// The unsafe flags take their environment variables, as every flag does.
func TestUnsafeServeFlags_Environment(t *testing.T) {
	f, err := parseServe(t, nil, map[string]string{"LOCKD_UNSAFE_DEBUG": "grant-held", "LOCKD_UNSAFE_FAULT_INJECTION": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.unsafe.faultsOn() || f.unsafe.debug != "grant-held" {
		t.Fatalf("unsafe flags from the environment: %+v", f.unsafe)
	}
}
