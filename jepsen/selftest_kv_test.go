package main

import (
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// The cases of the namespace's checkers: each switch breaks one guarantee
// of the namespace workload, which runs alone.
func init() {
	kv := []string{traffic.Namespace}
	selfTests = append(selfTests,
		// A put repeated with its request number applied again: the
		// request-number worker's repeat answers ok, and its read sees the
		// first value back.
		selfTestCase{name: "kv-forget-seq", debug: "kv-forget-seq", faults: "none", d: 20 * time.Second,
			workloads: kv, catch: []string{validate.KV}},
		// A fenced write accepted with a token its holder gave up: the
		// fenced writers' late writes, after their release, are applied.
		selfTestCase{name: "stale-guard", debug: "stale-guard", faults: "none", d: 20 * time.Second,
			workloads: kv, catch: []string{validate.FencedWrites}},
		// An ephemeral key outliving its session: the reader lists it
		// after the session's destroy was acknowledged.
		selfTestCase{name: "keep-ephemeral", debug: "keep-ephemeral", faults: "none", d: 20 * time.Second,
			workloads: kv, catch: []string{validate.Ephemeral}},
		// A watch answer that leaves out an event: acknowledged writes
		// whose index is a multiple of five never reach the watchers.
		selfTestCase{name: "drop-watch-event", debug: "drop-watch-event", faults: "none", d: 20 * time.Second,
			workloads: kv, catch: []string{validate.Watches}},
		// The namespace workload under leader kills, pauses and
		// partitions: nothing to find.
		selfTestCase{name: "kv control", faults: "kill-leader,pause-leader,partition-leader,partition-split", d: 45 * time.Second,
			workloads: kv},
	)
}
