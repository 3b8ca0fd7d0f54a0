package validate

import (
	"sort"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
)

// grantKey names a session's holdings of a lock.
type grantKey struct{ lock, session string }

// grantID names one grant: a holding of a lock by a session with a token.
type grantID struct {
	lock, session string
	token         uint64
}

// firstGrants returns, for every grant, its first successful acquire
// (re-acquiring a held lock returns the same token and is the same grant).
func firstGrants(ops []history.Op) []history.Op {
	seen := map[grantID]bool{}
	var out []history.Op
	for _, op := range ops {
		if op.Kind != history.Acquire || op.Status != history.OK {
			continue
		}
		k := grantID{op.Lock, op.Session, op.Token}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, op)
	}
	return out
}

// ExtraGrant is a grant learned outside the history (the child fence
// clients report theirs to the resource), known to have been made within
// [Call, Return] on the harness clock (Return 0: when is unknown).
type ExtraGrant struct {
	Lock, Session string
	Token         uint64
	Call, Return  int64
}

// CheckTokens checks that no token of a lock was handed to two grants
// (tokens are Raft indexes; shared holders of one lock granted by the same
// entry share one, and so do different locks granted by one entry), and
// that a grant acknowledged
// before another was invoked has the lower token. The extra grants count
// for both: a child fence client's grant is ordered against every lock's
// grants, as an in-process worker's is (tokens are global). An extra grant
// reported more than once (a child re-finding its holding) counts once,
// over its first report's window; one the history has already counts
// from the history.
func CheckTokens(ops []history.Op, extra []ExtraGrant) Verdict {
	v := Verdict{Checker: Tokens}
	type owned struct {
		grantKey
		shared bool
	}
	// A token is unique within its lock: one entry can grant several
	// locks (a batch of expiries hands each of their locks over), and
	// then they share its index, as design.md says ("tokens of different
	// locks come from the same sequence but say nothing about each
	// other"); within a lock only shared holders granted by one entry do.
	type lockToken struct {
		lock string
		tok  uint64
	}
	owner := map[lockToken]owned{}
	claim := func(tok uint64, k grantKey, shared bool) {
		lt := lockToken{k.lock, tok}
		o, ok := owner[lt]
		if ok && o.grantKey != k && !(o.shared && shared) {
			v.addf("token %d of %s granted twice: to %s and to %s", tok, k.lock, short(o.session), short(k.session))
			return
		}
		owner[lt] = owned{k, shared}
	}
	grants := effectiveCalls(firstGrants(ops), ops)
	known := map[grantID]bool{}
	for _, g := range grants {
		claim(g.Token, grantKey{g.Lock, g.Session}, g.Mode == "shared")
		known[grantID{g.Lock, g.Session, g.Token}] = true
	}
	outside := map[grantID]int{} // index in grants of an extra grant's first report
	for _, g := range extra {
		claim(g.Token, grantKey{g.Lock, g.Session}, false)
		id := grantID{g.Lock, g.Session, g.Token}
		if known[id] || g.Return <= 0 {
			continue
		}
		op := history.Op{Lock: g.Lock, Kind: history.Acquire, Session: g.Session, Token: g.Token, Status: history.OK,
			Call: g.Call, Return: g.Return, Err: "reported to the fenced resource"}
		if i, ok := outside[id]; ok {
			if g.Return < grants[i].Return {
				grants[i] = op
			}
			continue
		}
		outside[id] = len(grants)
		grants = append(grants, op)
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
	v.Cover(len(grants), "grants", "%d grants in real-time order (%d of them only reported to the fenced resource, by child fence clients); %d reports of the fenced resource for uniqueness",
		len(grants), len(outside), len(extra))
	v.undecidedIfNone("no grant to check")
	return v
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// effectiveCalls moves each grant's invocation back to the first acquire
// of the same session and lock whose outcome was unknown since that
// session last held the lock or was acknowledged releasing it: such an acquire may have been
// the one the server granted, and the later acquire that reported the
// token only found it held already (acquires are idempotent per session).
// A refusal of the session's acquire because the lock was held or in its
// lock-delay says the session did not hold the lock when the refusal was
// decided: an attempt still pending can have been granted only after
// that, so the window starts no earlier than the refusal's invocation.
func effectiveCalls(grants, ops []history.Op) []history.Op {
	pending := map[grantKey]int64{}
	eff := map[int64]int64{} // op ID -> effective call
	for _, op := range ops { // ops are in invocation order
		k := grantKey{op.Lock, op.Session}
		switch {
		case op.Kind == history.Acquire && op.Status == history.Unknown:
			if _, ok := pending[k]; !ok {
				pending[k] = op.Call
			}
		case op.Kind == history.Acquire && op.Status == history.OK:
			if c, ok := pending[k]; ok {
				eff[op.ID] = c
			}
			delete(pending, k)
		case op.Kind == history.Acquire && op.Status == history.Fail && refusal(op.Code):
			if _, ok := pending[k]; ok {
				pending[k] = op.Call
			}
		case op.Kind == history.Release && op.Status == history.OK:
			// Only an acknowledged release ends the window: one of
			// unknown outcome (the client library's give-back after an
			// acquire it lost track of) may have been applied before the
			// pending acquire was granted, or never.
			delete(pending, k)
		}
	}
	out := make([]history.Op, len(grants))
	for i, g := range grants {
		if c, ok := eff[g.ID]; ok && c < g.Call {
			g.Call = c
		}
		out[i] = g
	}
	return out
}

// refusal reports whether a failed acquire's code says the lock was not
// the session's when the server decided (held by another session, or free
// in its lock-delay), rather than that the request was not decided.
func refusal(code string) bool { return code == api.CodeLockHeld || code == api.CodeLockDelay }
