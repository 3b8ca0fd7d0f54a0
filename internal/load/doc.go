// Package load measures a running lockd cluster's serving path from the
// outside, over its HTTP API: `lockd bench locks`, `handoff` and
// `keepalive`.
//
// The rows' loops talk to a System (create a session, renew it, take a
// lock with or without waiting, release it, end the session, count the
// writes committed), so that the same loops measure other lock services
// too: lockd's HTTP API is the System used unless Config.System names
// another (bench/compare has etcd and ZooKeeper).
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
//
// lockd's requests are plain HTTP with JSON bodies through one shared
// connection pool, with no retries: an error is counted and the cycle is
// not. The package uses httpapi/wire's types, not the client library, so
// that what is measured is the server (and the library's own costs stay
// out of the numbers).
//
// Every row creates its sessions and names under a prefix unique to the
// run (bench/<kind>/<run id>/...) and destroys its sessions when it ends,
// so a row leaves nothing held behind; the names stay in the state as
// free locks.
package load
