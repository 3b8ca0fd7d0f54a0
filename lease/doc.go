// Package lease is the lockd node. In Raft mode (New) it opens
// hashicorp/raft with its log and stable store (raft-wal, or bbolt for data
// dirs created with it) and a file snapshot store, bootstraps or recovers
// the cluster, and on the leader keeps the master lease, the session
// deadlines and the timers of lock-delays and waits, and serves reads under
// the lease (reads.go). In a classic mode (NewLocal) the same node logic
// runs on a local engine: the coordinator a classic elector names serves
// from its own, unreplicated state machine (local.go says what that does
// not guarantee).
//
// The contract, stated here because callers would otherwise assume too much:
//
//   - Writes (sessions, acquires, releases, expiries) are Raft commits: they
//     are safe whatever the clocks do and however late messages arrive.
//   - Default reads and keepalives are answered by the leader from its own
//     state while it holds the master lease: linearizable as long as the
//     nodes' clocks run at rates within Config.MaxClockDrift of each other,
//     with no bound assumed on message delay and nothing on the clocks'
//     absolute values. ?consistent reads confirm a quorum with a fresh round
//     of the lease exchange (exchange.go, promise.go) and assume no clock.
//   - Session deadlines, lock-delays and waits are measured on the leader's
//     monotonic clock and restarted at full length by a new leader; no
//     node's wall clock decides a grant.
//
// The master lease rests on six assumptions, each kept by code named here
// (docs/design.md, "The master lease", has the argument and the tests):
//
//	A1 a follower that promised leader L in term T takes part in no election
//	   until the promise ends, unless L released it (the guarded transport,
//	   transport.go, armed before Raft's state is read for a promise);
//	A2 any two nodes' clocks measure an interval within MaxClockDrift;
//	A3 a restarted node waits out the promise of its previous run (bootWait);
//	A4 a leader gives its lease up for the term before a transfer, and a
//	   follower obeys TimeoutNow only from its leader, once released;
//	A5 membership changes one voter at a time;
//	A6 the lease is used only while Raft says this node leads in the lease's
//	   term (leaderTerm.leaseValid, at every use).
//
// Node implements the Service interface httpapi declares and knows nothing
// of HTTP: package server wires the two together.
package lease
