// Package peerhttp carries the API requests a follower forwards to the
// leader over the peer port, instead of a second HTTP/1.1 connection to the
// leader's API port.
//
// The follower's side is an http.RoundTripper (Transport), so the
// forwarding logic in httpapi (its bounds, its watch on the leader, and
// its rule that 503 means "not sent" and 504 "outcome unknown") stays the
// same whatever carries the request. The leader's side (Serve) runs each
// request through the same http.Handler its API port serves.
//
// Why: every forwarded request used to be encoded as HTTP/1.1 by the
// follower, parsed by the leader's HTTP server, and answered on a
// connection of its own, which cost the cluster about 40% of its
// throughput when clients were spread over the nodes. Here requests to one
// node share one connection with its fault rules (internal/mux), each
// request and answer is one length-prefixed binary frame, and the frames
// queued while the connection was busy leave in one write.
//
// A request's context ends on the leader when the follower cancels it
// (its client went away, or it stopped waiting) or the connection fails,
// as it would with net/http. Answers are sent whole when the handler
// returns: no API answer streams.
package peerhttp
