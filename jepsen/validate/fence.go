package validate

import (
	"sort"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckFencing checks the fenced lock and its resource. Fencing is only as
// good as the order of the tokens it compares, so first the grants of the
// fenced lock that the writers reported (the child processes' among them,
// which the history does not hold): a grant acknowledged before another
// was invoked must have the lower token, or a newer holder's writes would
// be refused in favour of an older one's. Then the resource's log: no
// accepted write may carry a token lower than a write the resource had
// accepted before it (a stale holder's write landing after a newer
// holder's). With fencing on, the resource refuses such writes; with it
// off (the negative control), a paused holder's late write shows up here.
func CheckFencing(writes []traffic.Write, grants []traffic.Grant) Verdict {
	v := Verdict{Checker: Fencing}
	checkGrantOrder(&v, grants)
	var highest uint64
	var by string
	accepted, refused := 0, 0
	for _, w := range writes {
		if !w.Accepted {
			refused++
			continue
		}
		accepted++
		if w.Token < highest {
			v.addf("stale write accepted at %s: %s wrote with token %d after %s had written with %d",
				history.Seconds(w.At), w.Client, w.Token, by, highest)
			continue
		}
		highest, by = w.Token, w.Client
	}
	v.Cover(len(grants)+accepted+refused, "grants and writes", "%d grants of the fenced lock, %d writes accepted, %d refused as stale",
		len(grants), accepted, refused)
	v.undecidedIfNone("no grant of the fenced lock and no write to the fenced resource: the fenced workload did not run")
	return v
}

// checkGrantOrder adds a violation for every grant whose token is not
// higher than that of a grant to another holder acknowledged before it was
// invoked. Grants without a known window (Return 0) are left out.
func checkGrantOrder(v *Verdict, grants []traffic.Grant) {
	var known []traffic.Grant
	for _, g := range grants {
		if g.Return > 0 {
			known = append(known, g)
		}
	}
	byReturn := append([]traffic.Grant(nil), known...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	byCall := append([]traffic.Grant(nil), known...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var top traffic.Grant // the highest token acknowledged so far
	j := 0
	for _, g := range byCall {
		for j < len(byReturn) && byReturn[j].Return < g.Call {
			if byReturn[j].Token > top.Token {
				top = byReturn[j]
			}
			j++
		}
		if g.Token <= top.Token && !(g.Token == top.Token && g.Session == top.Session) {
			v.addf("fenced lock's token went back: %s (session %s) acquired it from %s with token %d, after %s (session %s) had been granted %d by %s",
				g.Client, short(g.Session), history.Seconds(g.Call), g.Token, top.Client, short(top.Session), top.Token,
				history.Seconds(top.Return))
		}
	}
}
