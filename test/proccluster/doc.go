// Package proccluster runs a cluster of real lockd processes for the fault
// harness: it builds the binary, picks free ports on 127.0.0.1, gives each
// node its own data directory, and starts, kills (SIGKILL), pauses
// (SIGSTOP/SIGCONT) and restarts nodes by the PIDs it started itself. It
// also speaks the nodes' debug API (fault rules, clock) and reads
// GET /v1/cluster. With Config.TLS it makes a CA and certificates and starts
// a secured cluster (HTTPS with client certificates, mutual TLS between
// nodes), whose API it then speaks over HTTPS; with Config.ACL it turns
// ACLs on with a bootstrap admin token, which its own calls send, and
// makes other tokens (CreateToken).
//
// It is not a general process supervisor: every process it starts runs in
// a process group of its own, and Close kills exactly those groups, so a
// run never leaves a process behind even when it fails or times out.
package proccluster
