//go:build lockd_unsafe

package server_test

import (
	"os"
	"testing"

	"github.com/lockd/lockd/lease"
)

// leaseRuleFromEnv sets the unsafe switch RoundLease in nc when
// LOCKD_LEASE_RULE=round: the master lease's old rule, which the lease
// tests catch.
func leaseRuleFromEnv(_ testing.TB, nc *lease.Config) {
	nc.Unsafe.RoundLease = os.Getenv("LOCKD_LEASE_RULE") == "round"
}

// TestCluster_UnsafeStaleReadsIsCaught turns the lease check off and shows
// that the test above would notice.
func TestCluster_UnsafeStaleReadsIsCaught(t *testing.T) {
	_, _, _, after, leaseDur := cutOffLeader(t, func(nc *lease.Config) { nc.Unsafe.StaleReads = true })
	if after <= leaseDur {
		t.Fatalf("with stale-reads the old leader's last answer came %v after the cut, within its lease %v: the check cannot see the bug", after, leaseDur)
	}
}

// TestCluster_UnsafeNoSessionGraceIsCaught shows that the test above sees a
// new leader that does not give inherited sessions their TTL.
func TestCluster_UnsafeNoSessionGraceIsCaught(t *testing.T) {
	g := failoverSessions(t, func(nc *lease.Config) { nc.Unsafe.NoSessionGrace = true })
	if g.alive == g.sessions {
		t.Fatalf("without the grace all %d sessions were alive at 0.9 TTL: the check cannot see the bug", g.sessions)
	}
}

// TestCluster_RaftPartitionUnsafeStaleReadsIsCaught turns the master lease
// check off: the cut-off leader then serves until Raft steps it down, past
// its lease, and the bound above sees it.
func TestCluster_RaftPartitionUnsafeStaleReadsIsCaught(t *testing.T) {
	p := partition(t, true, func(nc *lease.Config) { nc.Unsafe.StaleReads = true })
	if bound := p.leaseDur + splitTolerance; p.minorityLastServed <= bound {
		t.Fatalf("with stale reads the cut-off leader served until %v after the split, within %v: the check cannot see the bug",
			p.minorityLastServed, bound)
	}
	t.Logf("with stale reads the cut-off leader served until %v after the split (lease %v)", p.minorityLastServed, p.leaseDur)
}
