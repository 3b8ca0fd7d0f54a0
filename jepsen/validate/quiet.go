package validate

import (
	"fmt"

	"github.com/lockd/lockd/jepsen/history"
)

// QuietSample is one reading of the leader's Raft state during the quiet
// window.
type QuietSample struct {
	At     int64
	Leader string
	Term   uint64
	Commit uint64
}

// QuietWindow is what the runner saw in a window with no faults and no
// workload, while only keepalives ran: the leader's commit index sampled
// through the window, and how many keepalives of how many sessions the
// leader acknowledged meanwhile.
type QuietWindow struct {
	Samples    []QuietSample
	Sessions   int
	Keepalives int
	// Skipped says why the runner could not hold the window ("" if it did).
	Skipped string
}

// CheckQuiet checks that keepalives write nothing: a keepalive only moves
// the leader's in-memory deadline, so in a window where nothing else runs
// the leader's commit index must not move. A window in which the leader
// or its term changed (a new leader commits an entry of its own), or no
// keepalive was acknowledged, decides nothing.
func CheckQuiet(w QuietWindow) Verdict {
	v := Verdict{Checker: QuietKeepalives}
	switch {
	case w.Skipped != "":
		v.Undecided = w.Skipped
		return v
	case len(w.Samples) < 2:
		v.Undecided = "fewer than two samples of the leader in the quiet window"
		return v
	case w.Keepalives == 0:
		v.Undecided = "no keepalive was acknowledged in the quiet window"
		return v
	}
	first := w.Samples[0]
	prev := first
	for _, s := range w.Samples[1:] {
		if s.Leader != first.Leader || s.Term != first.Term {
			v.Violations, v.Details = 0, nil
			v.Undecided = fmt.Sprintf("the leader changed in the quiet window (%s term %d, then %s term %d at %s)",
				first.Leader, first.Term, s.Leader, s.Term, history.Seconds(s.At))
			return v
		}
		if s.Commit != prev.Commit {
			v.addf("the commit index moved from %d to %d between %s and %s while only keepalives ran",
				prev.Commit, s.Commit, history.Seconds(prev.At), history.Seconds(s.At))
		}
		prev = s
	}
	v.Cover(w.Keepalives, "keepalives", "%d keepalives of %d sessions from %s to %s, commit index %d to %d in %d samples",
		w.Keepalives, w.Sessions, history.Seconds(first.At), history.Seconds(prev.At), first.Commit, prev.Commit, len(w.Samples))
	return v
}
