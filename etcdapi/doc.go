// Package etcdapi serves etcd's v3 gRPC API over lockd's namespace of
// keys and its sessions, with etcd's own published protobuf types
// (go.etcd.io/etcd/api/v3, v3lockpb, v3electionpb), so that etcd's clients talk to lockd
// unchanged. docs/etcd.md has the table of what is served and how it
// differs from etcd; this comment says how it is built.
//
// What maps onto what:
//
//   - Keys are the namespace's keys, any bytes of 1 to fsm.MaxKeyLen. They
//     reach the state machine through lease.Node's byte-key methods
//     (ReadNamespace, CommitTxn), never through the HTTP API's, so the HTTP
//     API's rule for names is unchanged: a key put here that is not a valid
//     name can be read over HTTP only in lists and watches, never by path.
//   - Revisions are Raft indexes: a key's create and mod revisions are the
//     indexes of the entries that created it and last changed it, and a
//     header's revision is the index of the last entry applied to the
//     state the answer was read from (a write's: its own entry). They
//     grow but are not contiguous: entries that change no key (sessions,
//     locks) take indexes too.
//   - A lease is a session. Lease ID N is the session "etcd-" followed by
//     N in 16 hexadecimal digits, so the mapping needs no table and every
//     node computes it; a key put with a lease is an ephemeral key of that
//     session. Sessions created otherwise have no lease ID: their keys
//     show lease 0.
//   - Writes are transactions (fsm.OpTxn) committed on the leader; a read
//     is served under the master lease, a serializable one from the
//     node's own state. A follower forwards what the leader must answer
//     over the peer port, as the HTTP API does, to ForwardPath on the
//     leader, which serves it with the same code.
//   - The Lock and Election services run clientv3's concurrency recipes
//     on the node against its own KV service (recipes.go), so their keys
//     are the keys concurrency.Mutex and concurrency.Election use. Their
//     types come from etcd's server module (v3lockpb, v3electionpb), the
//     only packages of it lockd links.
//   - With ACLs on, every call needs a token (metadata "token" or
//     "authorization"), checked against the key rules of acl as the HTTP
//     API checks its requests.
package etcdapi
