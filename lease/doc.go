// Package lease is the lockd node. In Raft mode (New) it opens
// hashicorp/raft with a bbolt log and stable store and a file snapshot store,
// bootstraps or recovers the cluster, and on the leader keeps the master
// lease, the session deadlines, the expiry and lock-delay timers, and serves
// reads under the lease. In a classic mode (NewLocal) the same node logic
// runs on a local engine: the coordinator a classic elector names serves
// from its own, unreplicated state machine (see local.go for what that
// does not guarantee).
//
// Safety rests on two things, stated here because callers would otherwise
// assume too much:
//
//   - Writes (sessions, acquires, releases, expiries) are Raft commits: they
//     are safe whatever the clocks do.
//   - Default reads and keepalives are answered by the leader from its own
//     state while it holds the master lease. That is linearizable only while
//     the clocks of the nodes run at rates within Config.MaxClockDrift of
//     each other. ?consistent reads confirm a quorum and do not depend on
//     clocks.
//
// The master lease works because a hashicorp/raft follower refuses to vote
// while it still knows a leader, and forgets the leader only when it has not
// heard from it for HeartbeatTimeout. A leader that had a quorum acknowledge
// it at time t is therefore not replaced before t + HeartbeatTimeout. Two
// holes are closed here: a node waits one HeartbeatTimeout after boot before
// starting Raft (a restarted follower forgets whom it heard from), and the
// leader gives the lease up before it transfers leadership (a transfer lets
// followers vote early).
//
// The safety argument below is about Raft mode. Node implements the Service
// interface httpapi declares. It knows nothing
// of HTTP: cmd/lockd wires the two together.
package lease
