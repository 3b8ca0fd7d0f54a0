package validate

import (
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckRequestNumbers checks lockd's promise about a repeated request (one
// sent again with the request number it was first sent with, as a client's
// retry or an abandoned request arriving late would be): while the first
// request's effect holds, the repeat gets the same answer, and once the
// session has released the lock, the repeat is never granted anew. Only
// definite outcomes count: a repeat of a first acquire that was granted,
// answered with another token, and a late repeat after an acknowledged
// release, answered with a grant.
func CheckRequestNumbers(retries []traffic.Retry) Verdict {
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
	v.Cover(repeats, "repeated requests", "%d repeated requests of %d granted first requests", repeats, len(first))
	v.undecidedIfNone("no repeated request of a granted first request")
	return v
}
