// Package fsm is lockd's deterministic state machine: sessions, exclusive and
// shared locks with their FIFO waiter queues and lock-delays, elections (a
// lock with a value), fencing tokens and the member table.
//
// The state changes only through Apply, one encoded Command at a time, with
// the Raft index of the entry that carries it. Given the same sequence of
// (index, command) pairs every FSM reaches the same state: the package never
// reads a clock (the leader stamps wall time into each command), never
// iterates a map where the order could leak into the result, and never does
// I/O. It knows nothing of Raft; lease adapts it to raft.BatchingFSM.
//
// What fsm does not do: keep session deadlines (the leader does that, in
// lease), decide when a session expires, or validate that the caller is the
// leader.
package fsm
