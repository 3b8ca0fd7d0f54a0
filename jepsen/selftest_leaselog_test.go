package main

import (
	"time"

	"github.com/lockd/lockd/jepsen/validate"
)

// Followers' Raft timers run fully at rate 3 only when the leader lease
// timeout is at most a third of the heartbeat timeout (Raft allows no
// shorter heartbeat timeout than it).
var fastFollowerArgs = []string{"--heartbeat-timeout", "1s", "--election-timeout", "1s", "--leader-lease-timeout", "300ms"}

func init() {
	selfTests = append(selfTests,
		// A deposed leader that serves on past its lease while a newer
		// leader serves: the lease logs overlap.
		selfTestCase{name: "deposed-serving", debug: "deposed-serving", faults: "partition-leader,pause-leader",
			catch: []string{validate.MasterLease, validate.Linearizability, validate.LeaseTiming}},
		// Followers' clocks (and so their Raft timers and promises) at rate
		// 2 to 3, far beyond the drift bound, then the leader paused or cut
		// off: they elect a new leader while the old lease runs.
		selfTestCase{name: "fast-followers", faults: "clock-fast-followers", unsafeClock: true,
			serveArgs: fastFollowerArgs, d: 90 * time.Second,
			catch: []string{validate.MasterLease, validate.Linearizability, validate.LeaseTiming}},
		// Clock rates within the drift bound, on leader and followers
		// alike: nothing to find.
		selfTestCase{name: "clock-drift control", faults: "clock-drift"},
		// The leaders checker: in Raft mode it checks one leader per term,
		// which hashicorp/raft keeps whatever lockd does (no switch breaks
		// it; what lockd adds, no two nodes serving at once, is
		// master-lease's). Its other half, one coordinator at a time, is
		// broken by a classic mode: bully elects a coordinator on each side
		// of a partition (docs/design.md, "The classic election modes"). The other checkers fail
		// there too; this case requires leaders itself to.
		selfTestCase{name: "leaders-bully", election: "bully", faults: "partition-leader,partition-split",
			d: 30 * time.Second, catch: []string{validate.Leaders}},
	)
}
