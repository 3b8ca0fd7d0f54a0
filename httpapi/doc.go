// Package httpapi serves lockd's JSON HTTP API v1 (sessions, locks,
// elections, the namespace of keys, cluster membership, health) on top of
// a Service, the node that owns the state.
//
// It parses and checks every request before the Service sees it: bodies are
// limited to api.MaxBody (a put of a key and a transaction to more), unknown JSON fields and out-of-range values are
// rejected with a message that names the problem, and omitted fields are
// filled with the defaults in package api. It maps errors to HTTP statuses
// in one table (codeStatus), and a follower transparently proxies requests
// that only the leader may answer, so clients never have to find the leader.
//
// It does not own a listener, TLS, server timeouts or connection limits
// (server does); what it bounds itself is a request body's
// arrival (Config.BodyTimeout) and forwarding (how long a follower waits
// for the leader's answer, and for a leader at all). It holds no state of
// its own: locks, sessions and leadership live behind Service. The
// /v1/debug/faults routes exist only when a FaultInjector is configured.
package httpapi
