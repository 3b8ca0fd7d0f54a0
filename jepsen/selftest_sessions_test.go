package main

import (
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// The cases of the election, read and session checkers.
func init() {
	selfTests = append(selfTests,
		// Blocking queries of the election now and then answer an older
		// leader: the election reader's Observe sees its token go back.
		selfTestCase{name: "observe-stale", debug: "observe-stale", faults: "none", d: 30 * time.Second,
			workloads: []string{traffic.Elections}, catch: []string{validate.Events, validate.Linearizability}},
		// Sessions expire at 0.9 x TTL: the expiry workload's abandoned
		// sessions lose their locks before the server's promise.
		selfTestCase{name: "early-expiry", debug: "early-expiry", faults: "none", d: 45 * time.Second,
			workloads: []string{traffic.Locks, traffic.Expiry}, catch: []string{validate.Linearizability, validate.LeaseTiming}},
		// A restarted node forgets the grants of its log: the kill -9 and
		// restart of every node at the end loses acknowledged grants.
		selfTestCase{name: "forget-grant", debug: "forget-grant", faults: "none", d: 20 * time.Second,
			workloads: []string{traffic.Locks}, catch: []string{validate.Durability}},
		// ?stale reads of a lock now and then answer an older state than
		// they answered before on the same node.
		selfTestCase{name: "stale-goes-back", debug: "stale-goes-back", faults: "none", d: 20 * time.Second,
			workloads: []string{traffic.Locks}, catch: []string{validate.StaleReads}},
		// Every keepalive commits an entry: the quiet window sees the
		// commit index move.
		selfTestCase{name: "keepalive-writes", debug: "keepalive-writes", faults: "none", d: 15 * time.Second,
			workloads: []string{traffic.Locks}, catch: []string{validate.QuietKeepalives}},
		// Elections with proclaims, ?stale and ?consistent reads under
		// faults, sessions across the full restart, the quiet window:
		// nothing to find.
		selfTestCase{name: "sessions control", faults: "kill-leader,pause-leader,partition-leader", d: 45 * time.Second},
	)
}
