package main

import (
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// The cases of the lock guarantees the lock workload exercises beyond
// exclusion: tokens that only grow, lock-delay and FIFO hand-offs (the
// workload's shared, queue and lock-delay locks), and their control under
// leader faults.
func init() {
	locks := []string{traffic.Locks}
	selfTests = append(selfTests,
		selfTestCase{name: "lower-token", debug: "lower-token", faults: "none", workloads: locks,
			catch: []string{validate.Tokens, validate.Linearizability}},
		selfTestCase{name: "early-lock-delay", debug: "early-lock-delay", faults: "none", workloads: locks,
			catch: []string{validate.LockDelay}},
		selfTestCase{name: "break-fifo", debug: "break-fifo", faults: "none", workloads: locks,
			catch: []string{validate.FIFO}},
		// The same workload against lockd under leader faults: nothing to
		// find.
		selfTestCase{name: "locks control", faults: "kill-leader,partition-leader,pause-leader", workloads: locks},
	)
}
