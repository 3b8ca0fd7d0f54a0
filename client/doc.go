// Package client is the Go client of lockd: sessions, locks with fencing
// tokens, leader elections and the namespace of keys, over lockd's HTTP
// API.
//
// A Client talks to any node of a cluster: followers forward to the leader,
// and the client moves on to another node when one is unreachable or has no
// leader, retrying the calls that are safe to retry with backoff and
// jitter. Session is the unit of liveness: it keeps itself alive in the
// background and reports, through Done and Ctx, the moment it can no longer
// be sure it is alive. Mutex and Election are built on a Session. KV is
// the namespace of keys: reads, lists, writes with compare-and-swap and
// fencing guards, transactions, and watches that ride out a change of
// leader; a put may be ephemeral, owned by a Session.
//
// What a lease does and does not guarantee. A Session keeps a conservative
// local deadline: the time the last successful keepalive was sent, plus the
// TTL shortened by the allowed clock drift and a margin. The server cannot
// expire the session before that deadline, so until it passes no other
// session can be granted this session's locks. Past it the session's
// context is cancelled and every Mutex and Election built on it reports loss.
// That is the most a lease can promise, and it is a promise about time: a
// process that is paused (a GC pause, SIGSTOP, a swapped-out VM) between
// checking that it holds a lock and acting on the lock may act after the
// deadline, when someone else holds it. No lock service can prevent that.
// What does prevent it is fencing: pass Mutex.Token with every write to the
// protected resource, and have the resource reject a token lower than the
// highest it has seen (see Fence), or ask the cluster (Client.CheckToken).
//
// The package imports the standard library and, of lockd, only api (the
// wire types, with acl), internal/backup (the backup file Snapshot
// writes) and internal/ctxsleep: never Raft nor the server.
package client
