package validate

// The checkers as they were before the breaches of issue 24 point 3 were
// found (main at d8bbae3), kept verbatim under old names so that each new
// breach's test shows, on one hand-made history, the old checker passing
// it and the new one catching it. They are not used by the harness.

import (
	"fmt"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// oldCheckRequestNumbers compared only repeats that succeeded.
func oldCheckRequestNumbers(retries []traffic.Retry) Verdict {
	v := Verdict{Checker: RequestNumbers}
	type key struct {
		session string
		seq     uint64
	}
	first := map[key]traffic.Retry{}
	repeats := 0
	for _, r := range retries {
		k := key{r.Session, r.Seq}
		switch r.Step {
		case traffic.RetryFirst:
			if r.Status == history.OK {
				first[k] = r
			}
		case traffic.RetryRepeat:
			f, ok := first[k]
			if !ok || r.Status != history.OK {
				continue
			}
			repeats++
			if r.Token != f.Token {
				v.addf("%s: session %s's request %d was granted token %d, and its repeat while it held the lock answered token %d (at %s)",
					traffic.RetryLock, short(r.Session), r.Seq, f.Token, r.Token, history.Seconds(r.Call))
			}
		case traffic.RetryLate:
			if _, ok := first[k]; !ok {
				continue
			}
			repeats++
			if r.Status == history.OK {
				v.addf("%s: session %s's request %d was granted again (token %d, at %s) after the session released the lock",
					traffic.RetryLock, short(r.Session), r.Seq, r.Token, history.Seconds(r.Call))
			}
		}
	}
	v.Details = append(v.Details, fmt.Sprintf("checked %d repeated requests of %d granted first requests", repeats, len(first)))
	return v
}
