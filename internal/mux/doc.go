// Package mux multiplexes all node-to-node traffic of a lockd node over one
// TCP listener, and is the one place where network faults are injected.
//
// The first byte of every connection names its protocol (ProtoRaft, and one
// byte for each classic elector); a short header after it carries the
// dialing node's ID, so both ends of every connection know which node is at
// the other end even though the dialer's port is ephemeral. Mux accepts the
// connections and hands each to the Layer registered for its byte; a Layer
// is a net.Listener that can also Dial, which is all hashicorp/raft's
// StreamLayer and the classic electors need. The design follows rqlite's
// tcp/mux. The package does not import raft; the adapter is one method:
//
//	type raftStream struct{ *mux.Layer }
//
//	func (s raftStream) Dial(a raft.ServerAddress, d time.Duration) (net.Conn, error) {
//		return s.Layer.Dial(string(a), d)
//	}
//
// Faults holds the fault rules of one node: per peer and per direction
// ("in" is what the node receives from the peer, "out" what it sends), one
// rule at a time, each replacing the one before:
//
//   - Drop resets: open connections are closed, dials refused, accepted
//     connections closed after their header.
//   - Blackhole loses bytes silently: writes report success and send
//     nothing, bytes that arrive are discarded, dials hang.
//   - Delay holds every byte for a duration, losing nothing and keeping the
//     order, on connections already open and on new ones alike. Out bytes
//     leave the delay after their Write; In bytes reach a Read the delay
//     after they arrived. A writer that outruns the delay waits for room (at
//     most about 1 MiB is held per direction of a connection), and a full
//     inbound line stops reading the socket, so memory stays bounded and
//     TCP's flow control slows the peer. Dials and accepts are not delayed.
//
// Every connection the Mux accepts or a Layer dials obeys the rules,
// whatever its protocol, so Raft and the classic modes are partitioned and
// delayed the same way; docs/harness.md, "The transport's fault rules",
// says how rules compose, what they cost and where they are coarser than a
// network.
//
// With WithTLS every connection is mutual TLS 1.3, begun before the
// protocol byte: the handshake comes first (both sides present a
// certificate of the cluster's CA and verify the other's; the dialer also
// checks the dialed host against the acceptor's certificate), then the
// header travels inside TLS, and the acceptor refuses a node ID that the
// dialer's certificate does not name (its Common Name or a DNS name). A
// connection that does not complete its handshake and header within the
// header timeout is closed. The fault rules sit above TLS: they judge the
// bytes of the protocol, exactly as on a plain connection, and a Drop
// closes the socket under TLS. A Mux speaks TLS or does not; there is no
// mixed mode, so all nodes of a cluster turn it on together.
//
// What mux does not do: it has no notion of Raft or of any message format,
// no authentication of the node ID a peer claims without TLS, no HTTP (the
// endpoints that drive Faults live in httpapi, behind an explicit unsafe
// flag that only a build with the lockd_unsafe tag has), and it does not
// retry or redial: a dropped connection is the caller's to replace.
package mux
