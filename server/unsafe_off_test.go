//go:build !lockd_unsafe

package server_test

import (
	"os"
	"testing"

	"github.com/lockd/lockd/lease"
)

// leaseRuleFromEnv refuses LOCKD_LEASE_RULE=round: the old rule is an
// unsafe switch, which only a build with the lockd_unsafe tag has.
func leaseRuleFromEnv(t testing.TB, _ *lease.Config) {
	if os.Getenv("LOCKD_LEASE_RULE") == "round" {
		t.Fatal("LOCKD_LEASE_RULE=round needs go test -tags lockd_unsafe")
	}
}
