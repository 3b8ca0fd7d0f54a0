package validate

import (
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// TestCheckLinearizable_EndsOfSessionsThatNeverHeld checks that the Ends
// left out of the search are exactly those of sessions refused the lock
// every time: the End of a session that holds it must stay, or the next
// holder's grant would be a violation.
func TestCheckLinearizable_EndsOfSessionsThatNeverHeld(t *testing.T) {
	inf := history.Infinity
	ops := []history.Op{
		{ID: 1, Lock: "l", Kind: history.Acquire, Session: "a", Token: 1, Status: history.OK, Call: 0, Return: 10},
		{ID: 2, Lock: "l", Kind: history.Acquire, Session: "c", Status: history.Fail, Code: "lock_held", Call: 12, Return: 14},
		{ID: 3, Lock: "l", Kind: history.Acquire, Session: "u", Status: history.Unknown, Call: 13, Return: inf},
		{ID: 4, Lock: "l", Kind: history.End, Session: "a", Status: history.Unknown, Call: 20, Return: inf},
		{ID: 5, Lock: "l", Kind: history.End, Session: "c", Status: history.Unknown, Call: 20, Return: inf},
		{ID: 6, Lock: "l", Kind: history.End, Session: "u", Status: history.Unknown, Call: 21, Return: inf},
		{ID: 7, Lock: "l", Kind: history.Acquire, Session: "b", Token: 5, Status: history.OK, Call: 30, Return: 40},
	}
	may := sessionsThatMayHold(ops)
	for s, want := range map[string]bool{"a": true, "b": true, "u": true, "c": false} {
		if may[grantKey{"l", s}] != want {
			t.Errorf("session %s may hold l: %v, want %v", s, may[grantKey{"l", s}], want)
		}
	}
	if v := CheckLinearizable(ops, nil, 10*time.Second, t.TempDir()); !v.OK() {
		t.Errorf("a's End lets b take the lock, yet: %s %v", v, v.Details)
	}
	// Without a's End, b's grant breaks exclusion: the End was needed.
	var noEnd []history.Op
	for _, op := range ops {
		if !(op.Kind == history.End && op.Session == "a") {
			noEnd = append(noEnd, op)
		}
	}
	if v := CheckLinearizable(noEnd, nil, 10*time.Second, t.TempDir()); v.Violations == 0 {
		t.Errorf("b granted while a still holds the lock, yet %s", v)
	}
}
