package lease

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
)

// TestRaftErr_OutcomeKnownOrNot checks raftErr's table: no_leader (503,
// "nothing happened, retry") only for the errors raft returns before an
// entry is appended anywhere, timeout (504, "outcome unknown") for every
// error after which the entry may still commit.
func TestRaftErr_OutcomeKnownOrNot(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		// Refused before the entry was appended: nothing happened.
		{raft.ErrNotLeader, api.CodeNoLeader},
		{raft.ErrLeadershipTransferInProgress, api.CodeNoLeader},
		{raft.ErrEnqueueTimeout, api.CodeNoLeader},
		{raft.ErrAbortedByRestore, api.CodeNoLeader},
		// Appended, maybe replicated: a later leader may commit it.
		{raft.ErrLeadershipLost, api.CodeTimeout},
		{raft.ErrRaftShutdown, api.CodeTimeout},
		{errors.New("log store: disk full"), api.CodeTimeout},
		{raft.ErrNothingNewToSnapshot, api.CodeTimeout},
		// Wrapped errors are recognised too.
		{fmt.Errorf("apply: %w", raft.ErrNotLeader), api.CodeNoLeader},
		{fmt.Errorf("apply: %w", raft.ErrLeadershipLost), api.CodeTimeout},
	}
	for _, tt := range tests {
		got := raftErr(tt.err)
		var e *api.Error
		if !errors.As(got, &e) {
			t.Errorf("raftErr(%v) = %T %v, want a *api.Error", tt.err, got, got)
			continue
		}
		if e.Code != tt.code {
			t.Errorf("raftErr(%v) code = %q, want %q", tt.err, e.Code, tt.code)
		}
		switch e.Code {
		case api.CodeTimeout:
			if !strings.Contains(e.Message, "outcome is unknown") && !strings.Contains(e.Message, "outcome unknown") {
				t.Errorf("raftErr(%v) = %q: a timeout must say the outcome is unknown", tt.err, e.Message)
			}
		case api.CodeNoLeader:
			if e.RetryAfter <= 0 {
				t.Errorf("raftErr(%v): no_leader without Retry-After", tt.err)
			}
		}
	}
}
