package validate

// The checkers as they were before the breaches of issue 24 point 3 were
// found (main at d8bbae3), kept verbatim under old names so that each new
// breach's test shows, on one hand-made history, the old checker passing
// it and the new one catching it. They are not used by the harness.

import (
	"fmt"
	"sort"

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

// oldCheckTokens ordered only the history's grants: the extra grants
// (a child fence client's, reported to the resource) were checked for
// uniqueness only.
//
// It checked that no token was handed to two grants (tokens are
// Raft indexes, unique across locks; only shared holders of one lock
// granted by the same entry share one), and that a grant acknowledged
// before another was invoked has the lower token.
func oldCheckTokens(ops []history.Op, extra []ExtraGrant) Verdict {
	v := Verdict{Checker: Tokens}
	type owned struct {
		grantKey
		shared bool
	}
	owner := map[uint64]owned{}
	claim := func(tok uint64, k grantKey, shared bool) {
		o, ok := owner[tok]
		if ok && o.grantKey != k && !(o.shared && shared && o.lock == k.lock) {
			v.addf("token %d granted twice: %s to %s and %s to %s", tok, o.lock, short(o.session), k.lock, short(k.session))
			return
		}
		owner[tok] = owned{k, shared}
	}
	grants := effectiveCalls(firstGrants(ops), ops)
	for _, g := range grants {
		claim(g.Token, grantKey{g.Lock, g.Session}, g.Mode == "shared")
	}
	for _, g := range extra {
		claim(g.Token, grantKey{g.Lock, g.Session}, false)
	}
	byReturn := append([]history.Op(nil), grants...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	byCall := append([]history.Op(nil), grants...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var maxTok uint64
	var maxOp history.Op
	j := 0
	for _, b := range byCall {
		for j < len(byReturn) && byReturn[j].Return < b.Call {
			if byReturn[j].Token > maxTok {
				maxTok, maxOp = byReturn[j].Token, byReturn[j]
			}
			j++
		}
		if b.Token <= maxTok {
			v.addf("token went back: %s granted %d to %s at %s, after %d to %s had returned at %s",
				b.Lock, b.Token, short(b.Session), history.Seconds(b.Return), maxTok, short(maxOp.Session), history.Seconds(maxOp.Return))
		}
	}
	v.Details = append(v.Details, fmt.Sprintf("checked %d grants", len(grants)+len(extra)))
	return v
}
