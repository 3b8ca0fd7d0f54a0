package validate

import (
	"strings"

	"github.com/lockd/lockd/jepsen/history"
)

// ViolationPrefix starts a timeline event that records a violation a
// workload saw while the run went on (for example Observe delivering an
// older token than it had delivered before).
const ViolationPrefix = "VIOLATION"

// CheckEvents counts the violations the workloads recorded on the
// timeline themselves: every event whose text starts with ViolationPrefix
// is one, and fails the run like any other checker's.
func CheckEvents(events []history.Event) Verdict {
	v := Verdict{Checker: Events}
	for _, e := range events {
		if strings.HasPrefix(e.What, ViolationPrefix) {
			v.addf("at %s: %s", history.Seconds(e.At), e.What)
		}
	}
	v.Cover(len(events), "timeline events", "%d timeline events", len(events))
	v.undecidedIfNone("no timeline")
	return v
}
