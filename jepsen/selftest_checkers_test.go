package main

import (
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// The cases of the breaches the queue, request-number, stale-read and
// token checkers were extended to see: a waiter dropped from the head of
// its queue unseen while the next one is granted, a repeated acquire of a
// lock the session holds answered with a refusal, ?stale reads that never
// go back but stay seconds behind, and a child fence client's grant with a
// token below another lock's acknowledged one.
func init() {
	locks := []string{traffic.Locks}
	selfTests = append(selfTests,
		selfTestCase{name: "skip-waiter", debug: "skip-waiter", faults: "none", d: 30 * time.Second, workloads: locks,
			catch: []string{validate.Queue}},
		selfTestCase{name: "refuse-repeat", debug: "refuse-repeat", faults: "none", d: 30 * time.Second, workloads: locks,
			catch: []string{validate.RequestNumbers}},
		selfTestCase{name: "stale-lag", debug: "stale-lag", faults: "none", d: 30 * time.Second, workloads: locks,
			catch: []string{validate.StaleReads}},
		selfTestCase{name: "lower-token-child", debug: "lower-token", faults: "none", d: 30 * time.Second,
			workloads: []string{traffic.Locks, traffic.Fenced}, catch: []string{validate.Tokens}},
	)
}
