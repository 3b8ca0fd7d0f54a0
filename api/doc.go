// Package api holds the JSON request and response types of lockd's HTTP API
// v1, its error codes, defaults and limits, and the rule for lock and
// election names: the vocabulary that the server (httpapi), the core
// (lease), the Go client (client) and the tools share.
//
// It imports the standard library and lockd's acl package (the token
// rules) only, so that programs importing the client do not pull in raft or
// its log stores, and so that it sits below every other package of lockd. Durations
// travel as Go duration strings ("15s"); indexes and tokens as JSON
// integers.
package api
