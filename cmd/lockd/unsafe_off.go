//go:build !lockd_unsafe

package main

import (
	"flag"
	"log/slog"

	"github.com/lockd/lockd/lease"
)

// A default build (without the lockd_unsafe tag) has no unsafe flags:
// "lockd serve" knows neither --unsafe-fault-injection nor --unsafe-debug
// (nor their environment variables), so a production binary cannot be
// started with a guarantee off. They are in unsafe_on.go.
type unsafeFlags struct{}

func (*unsafeFlags) register(*flag.FlagSet)    {}
func (*unsafeFlags) faultsOn() bool            { return false }
func (*unsafeFlags) apply(*lease.Config) error { return nil }
func (*unsafeFlags) warn(*slog.Logger)         {}
