// Package wire holds the JSON request and response types of lockd's HTTP API
// v1, shared by the server (httpapi) and the Go client (client).
//
// It depends on the standard library and lockd's acl package (token rules)
// only, so that programs importing the client do not pull in raft or
// bbolt. Durations travel as Go duration
// strings ("15s"); indexes and tokens as JSON integers.
package wire
