package validate

import (
	"fmt"

	"github.com/lockd/lockd/jepsen/history"
)

// CheckLeaseTiming checks that no successful acquire of a lock completed
// while a different session's client believed it held that lock: the
// belief runs from its acquire's return until the library gave it up
// (Lost closed); only shared holdings may overlap. Holds of clients the harness paused are left out: a
// paused process cannot notice its loss, which is what fencing is for.
// An acquire counts only if it returned before its own session's earliest
// possible end.
func CheckLeaseTiming(ops []history.Op, holds []history.Hold) Verdict {
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
		if !h.Paused {
			byLock[h.Lock] = append(byLock[h.Lock], h)
		}
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
	v.Details = append(v.Details, fmt.Sprintf("checked %d acquires against %d holds", n, len(holds)))
	return v
}
