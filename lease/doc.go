// Package lease is the lockd node. In Raft mode (New) it opens
// hashicorp/raft with a raft-wal (or, for older data dirs, bbolt) log and
// stable store and a file snapshot store, bootstraps or recovers the
// cluster, and on the leader keeps the master lease, the session
// deadlines, the expiry and lock-delay timers, and serves reads under the
// lease. In a classic mode (NewLocal) the same node logic
// runs on a local engine: the coordinator a classic elector names serves
// from its own, unreplicated state machine (see local.go for what that
// does not guarantee).
//
// Safety rests on two things, stated here because callers would otherwise
// assume too much:
//
//   - Writes (sessions, acquires, releases, expiries) are Raft commits: they
//     are safe whatever the clocks do and however late messages arrive.
//   - Default reads and keepalives are answered by the leader from its own
//     state while it holds the master lease. That is linearizable as long
//     as the nodes' clocks run at rates within Config.MaxClockDrift of each
//     other; it assumes no bound on message delay and nothing about the
//     clocks' absolute values. ?consistent reads confirm a quorum with a
//     fresh lease exchange and do not depend on clocks at all.
//
// # The master lease
//
// Assumptions, each named so that a reader can check it against the code:
//
//	A1 (what a follower promises) A follower that answered the lease
//	   exchange with a promise to leader L in term T takes part in no
//	   election until that promise ends, unless L released it for T:
//	   no vote or pre-vote request leaves it, none that arrives is
//	   granted. Raft's own state does not keep this (hashicorp/raft's
//	   follower loop can decide to campaign, see a heartbeat set the
//	   leader back, and campaign anyway); the guarded transport does
//	   (transport.go), armed before Raft's state is read for a promise.
//	A2 (clock rates) Any two nodes' clocks measure the same interval within
//	   a factor MaxClockDrift of each other. Nothing is assumed about their
//	   absolute values, nor about how long a message takes.
//	A3 (restarts) A node waits one HeartbeatTimeout after it starts before
//	   Raft runs, or the timeout it ran with before if that was longer
//	   (bootWait records it in the stable store), so a promise made before
//	   a crash is kept by the restarted node.
//	A4 (transfers) A leader gives its lease up for the rest of its term
//	   before it starts a leadership transfer (TransferLeadership, Close),
//	   and then releases its followers over the lease exchange; its
//	   guarded transport sends no TimeoutNow before that, and a follower
//	   obeys a TimeoutNow only from the leader it follows, once that
//	   leader released it for the term it is in (transport.go).
//	A5 (configurations) Membership changes one voter at a time, as
//	   hashicorp/raft does, so a majority of the configuration the leader
//	   uses meets a majority of any configuration an election may use.
//	A6 (the leader's own vote) A Raft leader rejects other candidates while
//	   it leads, but may vote at once after it steps down; so the lease is
//	   used only while Raft says this node leads in the lease's term
//	   (leaderTerm.leaseValid asks at every use, after the answer's state
//	   was read).
//
// The lease exchange (exchange.go, promise.go): the leader L of term T
// reads its clock (start), then asks every voter, over its own peer-port
// protocol, for its promise. A follower arms its guard, then answers with
// c + H − now, by its own clock, if it follows L in term T, where c is its
// last contact and H its HeartbeatTimeout; otherwise with nothing. By A1 it votes for nobody
// else until c + H, and it received the question after start, so on L's
// clock its promise lasts at least until start + (c + H − now)(1 − drift)
// (A2). Once promises from enough voters to make a quorum with L itself
// are in, the lease ends at start plus the smallest of them times
// (1 − MaxClockDrift), minus LeaseMargin. Any leader of a later term needs
// the votes of a majority, which includes one of those followers, so no
// other node leads before L's lease ends (A3–A6 keep the promises from
// being broken early). An answer, however late, speaks only of a promise
// measured after the question left, so a delayed, duplicated or reordered
// message can shorten the lease but never stretch it; a late answer to an
// earlier round is recognised by its sequence number and dropped.
//
// Why not hashicorp/raft's VerifyLeader: it completes a round with any
// answer that arrives after the round began, including the late answer to
// a heartbeat the follower received long before, so a lease counted from
// the round's start can outlive that follower's promise by the answer's
// delay. The --unsafe-debug switch round-lease (Unsafe.RoundLease, in a
// build with the lockd_unsafe tag only) brings that rule back so that the
// fault harness can show it catches it.
//
// What A2 asks of a node's clock, it asks of everything that measures
// time on the node: lockd's own timers and Raft's. hashicorp/raft measures
// its heartbeat and election timeouts on the system clock, so when the
// fault harness runs a node's injectable clock (SkewClock) at rate r, the
// node also reloads Raft's timeouts as the configured ones divided by r,
// and tells its promise as its own clock measures it: r times the real
// time left before its heartbeat timer fires. That is a node whose clock
// really runs at r: at a rate within 1 ± MaxClockDrift the lease holds; a
// follower running fast beyond it times out, and may vote for another
// leader, before the lease that counted on its promise ends. (Raft allows
// no heartbeat timeout shorter than LeaderLeaseTimeout, so a rate that
// would take it lower is held there.)
//
// With Config.LeaseLog set, a node appends a line to a file at every
// change of its master lease (a renewal, a change of its clock, the end of
// its term or a lease given up): from when, until when it may serve, both
// in the host's CLOCK_MONOTONIC, one clock for every process on the host.
// The fault harness reads every node's log after a run and checks that no
// two nodes' intervals overlap, lockd's promise, stronger than Raft's one
// leader per term.
//
// Time-based decisions other than the lease (session deadlines, the end
// of a lock-delay, a waiter's deadline) are measured on the leader's
// monotonic clock and restarted at full length by a new leader; no
// wall-clock value of any node decides a grant.
//
// The safety argument above is about Raft mode (a classic-mode coordinator
// has no quorum behind its lease). Node implements the Service
// interface httpapi declares. It knows nothing
// of HTTP: server wires the two together.
package lease
