package validate

import (
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckRequestNumbers checks lockd's promise about a repeated request (one
// sent again with the request number it was first sent with, as a client's
// retry or an abandoned request arriving late would be): while the first
// request's effect holds, the repeat gets the same answer, refusals
// included, and once the session has released the lock, the repeat is
// never granted anew. Only definite outcomes count:
//
//   - a repeat, while the session holds the lock, of a first acquire that
//     was granted must be granted with the same token: another token, or
//     a refusal of any kind but the session's end (session_expired: the
//     first answer's effect no longer holds), breaks it;
//   - a repeat of a first acquire that was refused must be refused too:
//     a grant breaks it;
//   - a late repeat after an acknowledged release must not be granted.
//
// A repeat whose first request's outcome is unknown proves nothing.
func CheckRequestNumbers(retries []traffic.Retry) Verdict {
	v := Verdict{Checker: RequestNumbers}
	type key struct {
		session string
		seq     uint64
	}
	first := map[key]traffic.Retry{}
	repeats, refusedRepeats := 0, 0
	for _, r := range retries {
		k := key{r.Session, r.Seq}
		switch r.Step {
		case traffic.RetryFirst:
			if r.Status != history.Unknown {
				first[k] = r
			}
		case traffic.RetryRepeat:
			f, ok := first[k]
			if !ok || r.Status == history.Unknown {
				continue
			}
			repeats++
			switch {
			case f.Status == history.Fail && r.Status == history.OK:
				v.addf("%s: session %s's request %d was refused (%s), and its repeat was granted token %d (at %s)",
					traffic.RetryLock, short(r.Session), r.Seq, f.Code, r.Token, history.Seconds(r.Call))
			case f.Status == history.Fail:
				refusedRepeats++
			case r.Status == history.OK && r.Token != f.Token:
				v.addf("%s: session %s's request %d was granted token %d, and its repeat while it held the lock answered token %d (at %s)",
					traffic.RetryLock, short(r.Session), r.Seq, f.Token, r.Token, history.Seconds(r.Call))
			case r.Status == history.Fail && r.Code != api.CodeSessionExpired:
				v.addf("%s: session %s's request %d was granted token %d, and its repeat while it held the lock was refused (%s, at %s)",
					traffic.RetryLock, short(r.Session), r.Seq, f.Token, r.Code, history.Seconds(r.Call))
			}
		case traffic.RetryLate:
			if f, ok := first[k]; !ok || f.Status != history.OK {
				continue
			}
			repeats++
			if r.Status == history.OK {
				v.addf("%s: session %s's request %d was granted again (token %d, at %s) after the session released the lock",
					traffic.RetryLock, short(r.Session), r.Seq, r.Token, history.Seconds(r.Call))
			}
		}
	}
	granted := 0
	for _, f := range first {
		if f.Status == history.OK {
			granted++
		}
	}
	v.Cover(repeats, "repeated requests", "%d repeated requests (%d of refused first requests) of %d first requests with a definite answer (%d granted)",
		repeats, refusedRepeats, len(first), granted)
	v.undecidedIfNone("no repeated request of a first request with a definite answer")
	return v
}
