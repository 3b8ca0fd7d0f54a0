// Package load measures a running lockd cluster's serving path from the
// outside, over its HTTP API: `lockd-bench locks`, `handoff`,
// `keepalive`, `waiters`, `watchers`, `kv` and `kv-scale`.
//
// The rows' loops talk to a System (create a session, renew it, take a
// lock with or without waiting, release it, end the session, count the
// writes committed, count a lock's waiters, a blocking read of a lock),
// so that the same loops measure other lock services too: lockd's HTTP
// API is the System used unless Config.System names another
// (bench/compare has etcd and ZooKeeper, without the last two, so
// without the waiters and watchers rows).
//
//   - locks: W workers, each with its own session and its own lock, take
//     and release it as fast as they can (acquire with wait 0, then
//     release: two Raft entries per cycle). Workers are spread over the
//     endpoints given, round-robin, so a worker on a follower pays for
//     the forwarding. Reported: cycles per second, and the latency of a
//     whole cycle (p50, p99, max).
//   - handoff: W sessions queue for one lock with blocking acquires; each,
//     once granted, releases at once. Reported: grants per second, and the
//     time from the start of a release to the moment the next waiter's
//     acquire returns with the grant (the hand-off is in the release's own
//     entry, so this is one commit plus two HTTP answers).
//   - keepalive: N sessions are created, then C callers renew them
//     round-robin as fast as they can, each session at least every TTL/3
//     if the rate allows. Reported: renewals per second and their latency,
//     the sessions that lapsed (the cluster expired one that was not
//     renewed within its TTL, because the renewers fell behind), wrong
//     expiries (the answer that a session expired came back less than a
//     TTL after its last successful renewal was sent: a bug, must be 0),
//     and the Raft entries
//     committed while only keepalives ran (must be 0: a keepalive writes
//     nothing).
//   - waiters: N sessions queue for one lock behind a holder (the setup:
//     until a read of the lock shows N waiters); then the holder releases
//     and the handoff row's loop runs with the queue N-1 deep (each
//     granted waiter queues again at the tail). Reported: grants per
//     second, release-to-grant latency, the setup, and the drain: the time
//     to destroy the sessions and see every queued acquire return.
//   - watchers: N blocking queries wait on N locks that nothing changes,
//     while one session's acquire+release cycles of another lock are
//     measured as the locks row measures them; a run starts with a row of
//     0 queries. Reported: cycles per second and their latency, the
//     queries still waiting at the end, and those the cluster refused
//     (429 too_many_requests), apart from errors.
//   - kv (the namespace of keys, through the KV interface, which
//     bench/compare's etcd and ZooKeeper implement too): for each count
//     of workers W, four rows. kv-put: each worker puts values of
//     --value-size bytes (1 KiB) to a key of its own, again and again.
//     kv-get: each worker reads a key of its own (a default read, which
//     the leader answers under its lease). kv-cas: the workers increment
//     counters on --hot-keys keys (4) with a read and a put with cas on
//     the index read, reading again after a cas_failed; reported apart
//     from errors: the conflicts; at the end the counters must sum to
//     the increments acknowledged. kv-txn: each worker runs transactions
//     that compare the modify indexes of two keys of its own and put
//     both (every one must succeed). Then kv-watch, for each count of
//     --fanout (1,000): that many watches of one key, spread over the
//     endpoints; one writer puts the key, waits until every watcher has
//     the change, and puts again. Reported: puts (increments,
//     transactions) per second and their latency; kv-watch's is from the
//     put's answer until the last watcher had the change.
//   - kv-scale (lockd only): one run of 100,000 keys (--keys), the
//     memory per key, a put's wake-up of its one watcher with 0 and
//     10,000 unrelated watches held (--watchers), and puts sorted by the
//     snapshots they overlapped; see KVScale.
//
// lockd's requests are plain HTTP with JSON bodies through one shared
// connection pool, with no retries: an error is counted and the cycle is
// not. The one exception is a session's create answered no_leader or
// timeout, which is sent again (up to 5 tries, each failed one counted)
// so that an election does not end a row of 100,000 sessions. The package uses package api's types, not the client library, so
// that what is measured is the server (and the library's own costs stay
// out of the numbers).
//
// Every row creates its sessions and names under a prefix unique to the
// run (bench/<kind>/<run id>/...) and destroys its sessions when it ends,
// so a row leaves nothing held behind; the names stay in the state as
// free locks.
package load
