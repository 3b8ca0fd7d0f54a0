package validate

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// StaleLag is the lag bound of the stale-reads checker: a stale read
// invoked this long after a write was acknowledged, on a node that is
// connected and caught up, must show it. Followers learn of a commit on
// the next heartbeat (a tenth of the heartbeat timeout, tens of
// milliseconds); the bound is far above that on purpose, so that only a
// node that does not catch up at all fails it.
const StaleLag = 3 * time.Second

// CheckStaleReads checks the ?stale reads:
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
func CheckStaleReads(reads []history.StaleRead, acks []history.Ack, lag time.Duration) Verdict {
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
	lagged, pairs := 0, 0
	for _, r := range reads {
		against := false
		for _, a := range acks {
			if r.Lock != a.Lock || r.Call < a.Return+int64(lag) {
				continue
			}
			against = true
			pairs++
			if r.Index < a.Index {
				v.addf("stale read of %s on %s at %s shows index %d, %v after index %d was acknowledged at %s",
					r.Lock, r.Node, history.Seconds(r.Call), r.Index, lag, a.Index, history.Seconds(a.Return))
			}
		}
		if against {
			lagged++
		}
	}
	v.Cover(lagged, "stale reads against acknowledged writes", "%d of %d stale reads against %d acknowledged writes (%d pairs) for a lag of %v",
		lagged, len(reads), len(acks), pairs, lag)
	switch {
	case len(reads) == 0:
		v.undecidedIfNone("no stale read")
	case len(acks) == 0:
		v.undecidedIfNone("no acknowledged write to compare the stale reads against")
	default:
		v.undecidedIfNone(fmt.Sprintf("no stale read invoked %v or more after an acknowledged write of its lock", lag))
	}
	return v
}

func holderName(s string) string {
	if s == "" {
		return "free"
	}
	return short(s)
}
