// Package server assembles one lockd node from its parts: the peer listener
// (internal/mux), the Raft node (lease) and the HTTP API (httpapi). It owns
// the listeners and the order in which things start and stop, so that
// cmd/lockd stays a thin layer of flags and the in-process cluster tests run
// exactly what the binary runs.
package server
