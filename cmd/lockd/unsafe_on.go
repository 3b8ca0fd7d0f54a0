//go:build lockd_unsafe

package main

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lockd/lockd/lease"
)

// This file exists only in a build with the lockd_unsafe tag (make
// build-unsafe, the fault harness's build): the flags of "lockd serve"
// that turn a guarantee off or let any HTTP client inject faults. A
// default build has unsafe_off.go instead: neither flag, nor its
// environment variable, exists there.

// unsafeFlags holds --unsafe-fault-injection and --unsafe-debug.
type unsafeFlags struct {
	faults bool
	debug  string
}

// unsafeDebugSwitches are the switches --unsafe-debug names, in the order
// its help lists them.
var unsafeDebugSwitches = []struct {
	name string
	set  func(*lease.Config)
}{
	{"stale-reads", func(c *lease.Config) { c.Unsafe.StaleReads = true }},
	{"no-boot-wait", func(c *lease.Config) { c.NoBootWait = true }},
	{"grant-held", func(c *lease.Config) { c.Unsafe.GrantHeld = true }},
	{"no-session-grace", func(c *lease.Config) { c.Unsafe.NoSessionGrace = true }},
	{"round-lease", func(c *lease.Config) { c.Unsafe.RoundLease = true }},
	{"deposed-serving", func(c *lease.Config) { c.Unsafe.DeposedServing = true }},
	{"lower-token", func(c *lease.Config) { c.Unsafe.LowerToken = true }},
	{"early-lock-delay", func(c *lease.Config) { c.Unsafe.EarlyLockDelay = true }},
	{"break-fifo", func(c *lease.Config) { c.Unsafe.BreakFIFO = true }},
	{"forget-seq", func(c *lease.Config) { c.Unsafe.ForgetSeq = true }},
	{"observe-stale", func(c *lease.Config) { c.Unsafe.ObserveStale = true }},
	{"early-expiry", func(c *lease.Config) { c.Unsafe.EarlyExpiry = true }},
	{"forget-grant", func(c *lease.Config) { c.Unsafe.ForgetGrant = true }},
	{"stale-goes-back", func(c *lease.Config) { c.Unsafe.StaleGoesBack = true }},
	{"keepalive-writes", func(c *lease.Config) { c.Unsafe.KeepaliveWrites = true }},
	{"skip-waiter", func(c *lease.Config) { c.Unsafe.SkipWaiter = true }},
	{"refuse-repeat", func(c *lease.Config) { c.Unsafe.RefuseRepeat = true }},
	{"stale-lag", func(c *lease.Config) { c.Unsafe.StaleLag = true }},
	{"kv-forget-seq", func(c *lease.Config) { c.Unsafe.KVForgetSeq = true }},
	{"stale-guard", func(c *lease.Config) { c.Unsafe.StaleGuard = true }},
	{"keep-ephemeral", func(c *lease.Config) { c.Unsafe.KeepEphemeral = true }},
	{"drop-watch-event", func(c *lease.Config) { c.Unsafe.DropWatchEvent = true }},
}

// unsafeDebugNames lists the switches, comma-separated.
func unsafeDebugNames() string {
	names := make([]string, len(unsafeDebugSwitches))
	for i, s := range unsafeDebugSwitches {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

func (u *unsafeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&u.faults, "unsafe-fault-injection", false,
		"UNSAFE, tests only: expose /v1/debug/faults and /v1/debug/clock, which let any HTTP client partition this node or skew its clock")
	fs.StringVar(&u.debug, "unsafe-debug", "",
		"UNSAFE, tests only: break guarantees on purpose for the fault harness's self-test: comma-separated "+unsafeDebugNames())
}

// faultsOn reports whether --unsafe-fault-injection is given.
func (u *unsafeFlags) faultsOn() bool { return u.faults }

// apply sets the switches --unsafe-debug names in nc.
func (u *unsafeFlags) apply(nc *lease.Config) error {
	if u.debug == "" {
		return nil
	}
next:
	for _, name := range strings.Split(u.debug, ",") {
		for _, s := range unsafeDebugSwitches {
			if s.name == strings.TrimSpace(name) {
				s.set(nc)
				continue next
			}
		}
		return fmt.Errorf("--unsafe-debug: unknown switch %q (known: %s)", name, unsafeDebugNames())
	}
	return nil
}

// warn says loudly, once the node serves, which unsafe flags it runs with.
func (u *unsafeFlags) warn(logger *slog.Logger) {
	if u.faults {
		logger.Warn("fault injection is enabled (--unsafe-fault-injection): never use this in production")
	}
	if u.debug != "" {
		logger.Warn("UNSAFE debug switches are on (--unsafe-debug): this node breaks lockd's guarantees on purpose",
			"switches", u.debug)
	}
}
