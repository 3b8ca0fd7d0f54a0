// Package system holds lockd's system tests (tier 3): they build the lockd
// binary, start real processes on 127.0.0.1, kill -9, SIGSTOP and restart
// them, and drive them over HTTP. The package has no code of its own.
package system
