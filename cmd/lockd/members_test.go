package main

import "testing"

func TestMembersCmd_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"members", "add", "n4", "127.0.0.1:7441"},                     // no --http
		{"members", "add", "n4", "--http", "http://127.0.0.1:7440"},    // no peer
		{"members", "remove"},                                          // no id
		{"members", "remove", "n4", "n5"},                              // two ids
		{"members", "n4"},                                              // list takes none
		{"members", "remove", "n4", "--http", "http://127.0.0.1:7440"}, // --http is for add
		{"leader-transfer", "n2"},                                      // --to, not an argument
		{"members", "--no-such-flag"},
	} {
		if code := run(args); code != exitUsage {
			t.Errorf("lockd %v exited %d, want %d", args, code, exitUsage)
		}
	}
}
