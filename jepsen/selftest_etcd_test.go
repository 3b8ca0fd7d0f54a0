package main

import (
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// The cases of the etcd workload: etcd's client and its recipes, alone,
// against lockd's etcd port, held to the lock and election checkers.
func init() {
	etcd := []string{traffic.Etcd}
	selfTests = append(selfTests,
		// A deposed leader that goes on answering reads: the recipes'
		// reads (the holder's, the leader's, and those by which a
		// contender learns it holds the lock) see a state that was
		// already gone.
		selfTestCase{name: "etcd stale-reads", debug: "stale-reads", faults: "partition-leader,pause-leader",
			workloads: etcd, catch: []string{validate.Linearizability}},
		// The etcd workload under leader kills, pauses and partitions:
		// nothing to find.
		selfTestCase{name: "etcd control", faults: "kill-leader,pause-leader,partition-leader,partition-split", d: 45 * time.Second,
			workloads: etcd},
	)
}
