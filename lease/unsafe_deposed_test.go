//go:build lockd_unsafe

package lease_test

import (
	"testing"

	"github.com/lockd/lockd/lease"
)

// Unsafe.DeposedServing: a leader cut off from the others keeps serving
// after a new leader serves, and its lease log says so (without it the
// old leader has stopped by then: TestLeaseLog_DeposedLeaderStops). The followers'
// heartbeat timers fire one to two timeouts after the cut, and a split
// vote costs another round, so the new leader may now and then come after
// even the extended lease: the switch gets three tries.
func TestUnsafeDeposedServing(t *testing.T) {
	for try := 1; ; try++ {
		serving, v := deposedCluster(t, func(c *lease.Config) { c.Unsafe.DeposedServing = true })
		if serving && v.Violations > 0 {
			return
		}
		t.Logf("on, try %d: old leader still serving = %v; %s", try, serving, v)
		if try == 3 {
			t.Fatalf("on: the deposed leader never served beside the new one in %d tries", try)
		}
	}
}
