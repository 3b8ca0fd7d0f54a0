package main

import (
	"testing"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/cli"
)

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
		{"members", "remove", "n4", "--non-voter"}, // --non-voter is for add
	} {
		if code := run(args); code != cli.ExitUsage {
			t.Errorf("lockd %v exited %d, want %d", args, code, cli.ExitUsage)
		}
	}
}

func TestMemberRole(t *testing.T) {
	for _, tt := range []struct {
		m    api.Member
		want string
	}{
		{api.Member{Voter: true, Leader: true}, "leader"},
		{api.Member{Voter: true}, "voter"},
		{api.Member{}, "non-voter"},
	} {
		if got := memberRole(tt.m); got != tt.want {
			t.Errorf("memberRole(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
