package validate

import (
	"sort"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// WithChildGrants returns ops completed with what the linearizability
// checker must know of the fenced lock's holders that are not in the
// history: the child fence clients, which report each grant to the
// resource (with its token and bounds on when it happened) but not their
// releases, session ends or attempts of unknown outcome.
//
// Each reported grant the history does not have becomes a successful
// acquire over its bounds. Its holding ended (release or session end)
// after the report, and, when the same child reported a later grant other
// than a repeat of this one, before that grant was acknowledged: an
// exclusive lock is granted anew only once the holding before has ended.
// That is recorded as a release over that window (one of unknown outcome,
// which may also never happen, after the child's last grant). A child may
// also hold the lock without the history knowing (a grant it never
// learned or never reported), so on the fenced lock a "lock_held"
// refusal says nothing, and its code is dropped; everything else (tokens
// that only grow, no grant while a known holder holds, checks) is checked
// as on any lock.
func WithChildGrants(ops []history.Op, lock string, grants []traffic.Grant) []history.Op {
	known := map[grantID]bool{}
	out := make([]history.Op, 0, len(ops)+2*len(grants))
	for _, op := range ops {
		if op.Kind == history.Acquire && op.Status == history.OK {
			known[grantID{op.Lock, op.Session, op.Token}] = true
		}
		if op.Lock == lock && op.Kind == history.Acquire && op.Code == "lock_held" {
			op.Code = ""
		}
		out = append(out, op)
	}
	byChild := map[string][]traffic.Grant{}
	var children []string
	for _, g := range grants {
		if known[grantID{lock, g.Session, g.Token}] {
			continue // an in-process worker's, in the history already
		}
		if _, ok := byChild[g.Client]; !ok {
			children = append(children, g.Client)
		}
		byChild[g.Client] = append(byChild[g.Client], g)
	}
	sort.Strings(children)
	for ci, name := range children {
		gs := byChild[name]
		client := -1 - ci // apart from the workers' numbers; its releases apart again
		for i := 0; i < len(gs); i++ {
			g := gs[i]
			for { // a repeat of the same holding is another acquire that found it held
				out = append(out, history.Op{Client: client, Lock: lock, Kind: history.Acquire, Session: g.Session,
					Token: g.Token, Status: history.OK, Call: g.Call, Return: g.Return, Err: "reported by " + name})
				if i+1 == len(gs) || gs[i+1].Session != g.Session || gs[i+1].Token != g.Token {
					break
				}
				i++
				g = gs[i]
			}
			rel := history.Op{Client: client - 1000, Lock: lock, Kind: history.Release, Session: g.Session,
				Status: history.Unknown, Call: g.Return, Return: history.Infinity, Err: "ended before the child's next grant"}
			if i+1 < len(gs) {
				rel.Status, rel.Return = history.OK, gs[i+1].Return
			}
			out = append(out, rel)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	for i := range out {
		if out[i].ID == 0 {
			out[i].ID = -int64(i + 1)
		}
	}
	return out
}
