package validate

import (
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckLeaseTiming checks that no successful acquire of a lock completed
// while a different session's client believed it held that lock: the
// belief runs from its acquire's return until the library gave it up
// (Lost closed); only shared holdings may overlap. The holds are the
// in-process workers' and the child fence clients' (which report theirs to
// the fenced resource). A hold of a client the harness paused counts only
// until the pause began: a paused process cannot notice its loss, which is
// what fencing is for. An acquire counts only if it returned before its
// own session's earliest possible end. The child clients' grants of the
// fenced lock (those of childGrants with Child set; they are not in ops)
// are acquires too: each is known only to have completed within [Call,
// Return], so it is a violation only when that whole window lies inside
// another session's belief.
func CheckLeaseTiming(ops []history.Op, holds []history.Hold, childGrants ...traffic.Grant) Verdict {
	v := Verdict{Checker: LeaseTiming}
	ends := map[grantKey]int64{}
	for _, op := range ops {
		if op.Kind == history.End {
			k := grantKey{op.Lock, op.Session}
			if e, ok := ends[k]; !ok || op.Call < e {
				ends[k] = op.Call
			}
		}
	}
	byLock := map[string][]history.Hold{}
	for _, h := range holds {
		if h.Paused {
			if h.PausedAt <= h.From {
				continue // paused from the start, or when is unknown
			}
			h.To = min(h.To, h.PausedAt)
		}
		byLock[h.Lock] = append(byLock[h.Lock], h)
	}
	n := 0
	for _, b := range firstGrants(ops) {
		if e, ok := ends[grantKey{b.Lock, b.Session}]; ok && b.Return >= e {
			continue
		}
		n++
		for _, h := range byLock[b.Lock] {
			if h.Shared && b.Mode == "shared" {
				continue // shared holders coexist
			}
			if h.Session != b.Session && h.From < b.Return && b.Return < h.To {
				v.addf("%s: %s acquired it (token %d) at %s while %s believed it held it (token %d) from %s to %s",
					b.Lock, short(b.Session), b.Token, history.Seconds(b.Return), short(h.Session), h.Token,
					history.Seconds(h.From), history.Seconds(h.To))
			}
		}
	}
	for _, g := range childGrants {
		if !g.Child {
			continue // an in-process worker's: its acquire is in ops
		}
		n++
		for _, h := range byLock[traffic.FencedLock] {
			if h.Session != g.Session && h.From < g.Call && g.Return < h.To {
				v.addf("%s: %s (session %s) acquired it (token %d) within %s-%s while %s believed it held it (token %d) from %s to %s",
					traffic.FencedLock, g.Client, short(g.Session), g.Token, history.Seconds(g.Call), history.Seconds(g.Return),
					short(h.Session), h.Token, history.Seconds(h.From), history.Seconds(h.To))
			}
		}
	}
	if len(holds) == 0 {
		n = 0 // nothing to check the acquires against
	}
	v.Cover(n, "acquires", "%d acquires against %d holds", n, len(holds))
	v.undecidedIfNone("no acquire and no client's belief that it held a lock to check it against")
	return v
}
