// Package fsm is lockd's deterministic state machine: sessions, exclusive and
// shared locks with their FIFO waiter queues and lock-delays, elections (a
// lock with a value), fencing tokens and the member table.
//
// The state changes only through Apply, one encoded Command at a time, with
// the Raft index of the entry that carries it. Given the same sequence of
// (index, command) pairs every FSM reaches the same state: the package never
// reads a clock, never iterates a map where the order could leak into the
// result, and never does I/O. It knows nothing of Raft; lease adapts it to
// raft.BatchingFSM.
//
// # Time
//
// No grant or refusal depends on a wall-clock value. A command carries the
// proposing leader's wall time, but the state only records it for display
// (a holder's acquired_at, a lock-delay's delay_until, a waiter's
// deadline). The two things that end with time are timers that the leader
// runs on its own monotonic clock:
//
//   - a lock-delay: when a session expires, every lock it held is marked
//     delayed, with the delay's length and the index of the expiring entry
//     (Lock.Delay, Lock.DelayIndex); nothing is granted on it until an
//     OpTimersDue names that delay;
//   - a waiter's wait: each waiter records its length and the index of the
//     entry that queued it or last retried (Waiter.Wait, Waiter.Since); it
//     stays queued until it is granted, cancelled, or an OpTimersDue names
//     that wait.
//
// Timers lists them. The leader starts a timer of the full length for each
// when it first sees it (a new leader therefore gives every pending delay
// and wait its full length again, as it gives every session a full TTL),
// and proposes OpTimersDue for those that ran out. A ref whose index no
// longer matches (the delay was restarted by a later expiry, the wait by a
// retry, or the timer ended already) changes nothing, so a late or repeated
// OpTimersDue is harmless.
//
// # Older logs and snapshots
//
// Builds before this one wrote version-1 entries, which decided lock-delays
// and waits by their wall times: an acquire was refused while its Now was
// before the lock's delay_until, and OpTick (op 7) ended the delays and
// dropped the waiters whose shown end was not after its Now. Decode still
// reads version-1 entries and applies them under exactly those rules, so a
// log replays to the state the build that wrote it reached, decisions and
// tokens included; they also record the lengths and indexes above, so that
// a leader of this build can take over what they left pending. A version-2
// entry (everything this build writes) never ticks: OpTick in it is
// refused, and OpTimersDue (op 14) and OpLetGo (op 15) do not exist in
// version 1.
//
// Request numbers (seq.go) are kept in a bounded table for sessions whose
// create-session entry names a window, as this build's leaders write; a
// session created by an entry without one keeps every number, as the
// builds that wrote such entries did, so their logs replay to the same
// decisions.
//
// Snapshots are written as version 4, which adds the ACL tokens (acl.go;
// version 3 added the windows and floors of bounded request numbers); a
// version-3 snapshot is read as one without tokens, a version-2 one as
// written (every session in it keeps every number). A version-1 snapshot is read with
// each pending lock-delay given the longest length the API accepts (60s)
// and each waiter the longest wait (5m), named by the object's modify
// index: they end no earlier than they would have. Older builds refuse
// version-2 entries and snapshots of a version above their own, and would
// ignore the window of a create-session, so every node must run this build
// (or a later one) before any of them leads: a cluster must not mix the
// two.
//
// What fsm does not do: keep session deadlines or any other timer (the
// leader does that, in lease), decide when a session expires, or validate
// that the caller is the leader.
package fsm
