// Package elections measures what an election costs: `lockd-bench elections`.
// For each algorithm (classic ring, bully and invitation, and Raft), each
// cluster size N and each scenario (best, worst, random) it counts the
// messages the cluster sends until it agrees on a new coordinator, by
// kind, and how long that takes, and it writes the results as an aligned
// text table, a CSV file and an SVG chart.
//
// The classic algorithms run in classic.Sim, a deterministic network with
// a virtual clock: their counts are exact and their times are virtual.
// The best and worst scenarios are the ones package classic's textbook
// tests set up (classic.go and raft.go say exactly what each scenario
// is), so the ring's rows read 2N and 3N-1 messages and the bully's N-2
// and N(N-1)/2 + (N-1)(N-2)/2 + N-2. Heartbeats are not election
// messages: they are reported in a column of their own and left
// out of the total.
//
// Raft runs as an in-process cluster of hashicorp/raft nodes over
// raft.InmemTransport, each wrapped in a transport that counts every RPC
// (and every reply) by type, with pipelining turned off so that no
// AppendEntries goes uncounted. The nodes use raft's DefaultConfig but
// for HeartbeatTimeout = ElectionTimeout = Config.RaftTimeout (200ms by
// default, lockd serves with 500ms), a LeaderLeaseTimeout of at most that
// and a CommitTimeout of at most a quarter of it (raft's 50ms by
// default). Its times are wall-clock times on this machine, so they vary
// from run to run and with the load; its counts vary too, since Raft's
// timeouts are randomized.
//
// What this package is not: a throughput or latency benchmark of lockd
// itself (that is the serving path, measured against a real cluster),
// and not a test of the algorithms' safety (package classic and the
// jepsen harness do that).
package elections
