// Package fsm is lockd's deterministic state machine: sessions, exclusive and
// shared locks and counting semaphores with their FIFO waiter queues and
// lock-delays, elections (a
// lock with a value), fencing tokens, request numbers, the member table,
// the ACL tokens, and a namespace of keys and values.
//
// The state changes only through Apply, one encoded Command at a time, with
// the Raft index of the entry that carries it. Given the same sequence of
// (index, command) pairs every FSM reaches the same state: the package never
// reads a clock, never iterates a map where the order could leak into the
// result, and never does I/O. It knows nothing of Raft; lease adapts it to
// raft.BatchingFSM. Refusal says in advance, without changing anything,
// what Apply would answer a command that is refused.
//
// No grant or refusal depends on a wall-clock value. A command carries the
// proposing leader's wall time, which the state records only for display (a
// holder's acquired_at, a lock-delay's delay_until, a waiter's deadline).
// The two things that end with time are timers the leader runs on its own
// monotonic clock:
//
//   - a lock-delay: when a session expires, every lock it held is marked
//     delayed, with the delay's length and the index of the expiring entry
//     (Lock.Delay, Lock.DelayIndex); nothing is granted on it until an
//     OpTimersDue names that delay. On a semaphore (a lock acquired with a
//     limit, Lock.Limit slots) only the slot the session held is delayed
//     (Lock.Slots, named by the session and that index, TimerRef.Slot),
//     and the other free slots stay grantable;
//   - a waiter's wait: each waiter records its length and the index of the
//     entry that queued it or last retried (Waiter.Wait, Waiter.Since); it
//     stays queued until it is granted, cancelled, or an OpTimersDue names
//     that wait.
//
// Timers lists them. The leader starts a timer of the full length for each
// when it first sees it, and proposes OpTimersDue for those that ran out. A
// ref whose index no longer matches (the delay was restarted, the wait
// retried, or the timer ended already) changes nothing, so a late or
// repeated OpTimersDue is harmless.
//
// The namespace (kv.go) changes only by transactions (OpTxn, kvtxn.go):
// compares choose between two lists of puts, deletes and gets, applied in
// one entry whose index is the revision of every key it writes; a guard
// makes one apply only under a lock's current fencing token. A session's
// ephemeral keys go in the entry that ends it. Every change is an event
// of a history (kvhistory.go) that watchers read after an index; it keeps
// events by count and by the age the entries' wall times give them. That
// is retention only, the one use of a wall time besides display: every
// replica drops the same events at the same entry, and nothing is granted
// or refused by it. A key belongs to the ACL token that wrote it last,
// and a transaction that would take that token past its limits on keys
// and bytes is refused whole (quota.go): decided here, from the tokens
// and keys of the state, so that every replica decides alike.
//
// Entries and snapshots carry versions, and Decode and Restore read every
// older one under the rules of the build that wrote it, so an old log
// replays to the state that build reached; docs/design.md, "Formats,
// protocols and upgrades", has the history and what older builds refuse.
//
// What fsm does not do: keep session deadlines or any other timer (lease
// does), decide when a session expires, or check that the caller leads.
package fsm
