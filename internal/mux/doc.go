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
// Faults holds the fault rules of one node: per peer and per direction, a
// Drop (connections reset, dials refused) or a Blackhole (bytes vanish, dials
// hang). Every connection the Mux accepts or a Layer dials obeys them,
// whatever its protocol, so Raft and the classic modes are partitioned the
// same way by tests and by the fault harness. With no rule set the cost on
// the data path is one atomic load per Read or Write.
//
// What mux does not do: it has no notion of Raft or of any message format,
// no TLS and no authentication of the node ID a peer claims, no HTTP (the
// endpoints that drive Faults live in httpapi, behind an explicit unsafe
// flag), and it does not retry or redial: a dropped connection is the
// caller's to replace.
package mux
