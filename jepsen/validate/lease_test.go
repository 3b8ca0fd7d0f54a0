package validate

import (
	"testing"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestCheckLeaseTiming_ChildHolds covers the child fence clients: their
// holds (reported to the resource) against the history's grants, their
// grants (known within [Call, Return]) against any hold, and holds the
// harness paused, which count only until the pause began.
func TestCheckLeaseTiming_ChildHolds(t *testing.T) {
	const lock = traffic.FencedLock
	child := history.Hold{Client: -1, Lock: lock, Session: "c", Token: 5, From: 10, To: 100}
	paused := child
	paused.Paused, paused.PausedAt = true, 30
	worker := history.Hold{Client: 1, Lock: lock, Session: "w", Token: 7, From: 200, To: 300}
	grant := func(session string, call, ret int64, isChild bool) traffic.Grant {
		return traffic.Grant{Client: "child-1", Session: session, Token: 9, Call: call, Return: ret, Child: isChild}
	}
	tests := []struct {
		name   string
		ops    []history.Op
		holds  []history.Hold
		grants []traffic.Grant
		want   int
	}{
		{"a child's hold overlapping another's grant", []history.Op{acq(lock, "w", 7, 40, 50)}, []history.Hold{child}, nil, 1},
		{"a grant after the child's hold", []history.Op{acq(lock, "w", 7, 90, 110)}, []history.Hold{child}, nil, 0},
		{"a paused child's hold: grant during the pause", []history.Op{acq(lock, "w", 7, 40, 50)}, []history.Hold{paused}, nil, 0},
		{"a paused child's hold: grant before the pause", []history.Op{acq(lock, "w", 7, 15, 25)}, []history.Hold{paused}, nil, 1},
		{"a hold paused from its start", []history.Op{acq(lock, "w", 7, 15, 25)},
			[]history.Hold{{Lock: lock, Session: "c", From: 10, To: 100, Paused: true, PausedAt: 10}}, nil, 0},
		{"a child's grant inside a worker's hold", nil, []history.Hold{worker}, []traffic.Grant{grant("c2", 210, 250, true)}, 1},
		{"a child's grant inside another child's hold", nil, []history.Hold{child}, []traffic.Grant{grant("c2", 20, 60, true)}, 1},
		{"a child's grant inside a paused child's pause", nil, []history.Hold{paused}, []traffic.Grant{grant("c2", 40, 60, true)}, 0},
		{"a child's grant whose window starts before the hold", nil, []history.Hold{worker}, []traffic.Grant{grant("c2", 150, 250, true)}, 0},
		{"a child's grant inside its own hold", nil, []history.Hold{child}, []traffic.Grant{grant("c", 20, 60, true)}, 0},
		{"an in-process grant is checked from the history only", nil, []history.Hold{worker}, []traffic.Grant{grant("c2", 210, 250, false)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckLeaseTiming(tt.ops, tt.holds, tt.grants...)
			if v.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
		})
	}
}
