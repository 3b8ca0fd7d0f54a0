package validate

// The checkers as they were before the breaches of issue 24 point 3 were
// found (main at d8bbae3), kept verbatim under old names so that each new
// breach's test shows, on one hand-made history, the old checker passing
// it and the new one catching it. They are not used by the harness.

import (
	"fmt"
	"sort"
	"time"

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

// oldCheckStaleReads is the stale-reads checker before the run recorded
// acknowledged writes during faults: it compared the reads with every ack
// it was given, and the run gave it one, after the heal.
//
// oldCheckStaleReads checked the ?stale reads:
//
//   - monotonic per node: a read of a lock invoked after another read of the
//     same lock by the same node process returned shows the same modify
//     index or a later one, and at the same index the same holder and
//     token (a process restarted from its log may start behind, so each
//     process is on its own);
//   - bounded lag: a read of a lock invoked lag or more after a write of
//     that lock was acknowledged (acks, recorded only while the cluster is
//     healed and every node caught up) shows that write's index or a
//     later one.
func oldCheckStaleReads(reads []history.StaleRead, acks []history.Ack, lag time.Duration) Verdict {
	v := Verdict{Checker: StaleReads}
	type key struct {
		node string
		proc int
		lock string
	}
	groups := map[key][]history.StaleRead{}
	var keys []key
	for _, r := range reads {
		k := key{r.Node, r.Proc, r.Lock}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range keys {
		byCall := groups[k]
		sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
		byReturn := append([]history.StaleRead(nil), byCall...)
		sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		var floor *history.StaleRead // the highest read that returned before the current one's call
		next := 0
		for _, r := range byCall {
			for next < len(byReturn) && byReturn[next].Return < r.Call {
				if floor == nil || byReturn[next].Index > floor.Index {
					floor = &byReturn[next]
				}
				next++
			}
			switch {
			case floor == nil:
			case r.Index < floor.Index:
				v.addf("stale read of %s on %s went back: index %d at %s after index %d at %s",
					r.Lock, r.Node, r.Index, history.Seconds(r.Call), floor.Index, history.Seconds(floor.Return))
			case r.Index == floor.Index && (r.Holder != floor.Holder || r.Token != floor.Token):
				v.addf("stale read of %s on %s at %s: index %d with holder %s/%d, earlier %s/%d at the same index",
					r.Lock, r.Node, history.Seconds(r.Call), r.Index, holderName(r.Holder), r.Token, holderName(floor.Holder), floor.Token)
			}
		}
	}
	lagged := 0
	for _, a := range acks {
		for _, r := range reads {
			if r.Lock != a.Lock || r.Call < a.Return+int64(lag) {
				continue
			}
			lagged++
			if r.Index < a.Index {
				v.addf("stale read of %s on %s at %s shows index %d, %v after index %d was acknowledged at %s",
					r.Lock, r.Node, history.Seconds(r.Call), r.Index, lag, a.Index, history.Seconds(a.Return))
			}
		}
	}
	v.Details = append(v.Details, fmt.Sprintf("%d stale reads; %d of them checked against %d acknowledged writes for a lag of %v",
		len(reads), lagged, len(acks), lag))
	return v
}
