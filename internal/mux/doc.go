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
// A rule judges a byte when it crosses the node's edge: when it is written
// (Out) or when it arrives (In), whether or not a Read is waiting for it; a
// Read already blocked in the socket when a rule is set obeys the rule for
// what it returns. Healing or replacing a Delay ends it for later bytes;
// bytes it already holds are delivered at their time, still in order.
// Blackhole and Drop win over Delay: setting either in a direction throws
// away what a Delay holds there. Rules on the two nodes of a link compose:
// the sender's Out delay and the receiver's In delay add up, and a byte the
// sender delays is lost at the receiver if an In Blackhole is in force there
// when it arrives. Every connection the Mux accepts or a Layer dials obeys
// the rules, whatever its protocol, so Raft and the classic modes are
// partitioned and delayed the same way by tests and by the fault harness.
//
// Cost: with no rule ever set on a connection, a Read or a Write goes
// straight to the socket after a few atomic operations. A direction that a
// rule has reached (any In rule, an Out Delay) is served from then until
// Close by a delay line with a goroutine of its own; Close stops it.
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
// flag that only a build with the lockd_unsafe tag has), and it does not retry or redial: a dropped connection is the
// caller's to replace. Its faults are coarser than a network's: a Write
// already inside the socket when an Out rule is set completes as it began;
// a delay holds bytes, not connection setup, nor does it reorder, duplicate
// or jitter them; Close discards bytes a delay still holds, as a reset
// would, where a real close would deliver them first; and loss under
// Blackhole cuts a byte stream mid-frame, which the protocol on top sees as
// a garbled stream once healed.
package mux
