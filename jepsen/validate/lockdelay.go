package validate

import (
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// The leader measures the session's TTL and then the lock-delay on its own
// clock, which may run up to the allowed drift (1% by default) faster than
// the harness's. The checker leaves that much room: lockDelaySlack of the
// delay, and lockDelayMargin for the TTL before it (2% of TTLs up to
// 2.5 s).
const (
	lockDelaySlack  = 0.02
	lockDelayMargin = 50 * time.Millisecond
)

// CheckLockDelay checks lock-delay: a session that expires while holding a
// lock leaves it ungrantable for the session's lock-delay, measured from
// the expiry.
//
// It looks only at sessions that nobody destroys (an End marked Expire: a
// destroy releases at once, with no delay), that hold the lock when they
// end for certain: an exclusive acquire succeeded, and no release and no
// acquire of unknown outcome of that session on the lock followed (a
// refused acquire changes nothing). The server may not expire such a
// session before the End's invocation (the send time of its last
// acknowledged create or keepalive + TTL), so no other session's grant of
// the lock with a higher token (a grant after this session's) may complete
// before that moment + the lock-delay, less the room left to clock rates
// (lockDelaySlack, lockDelayMargin). A new leader restarts a delay at its
// full length: later, never earlier.
//
// The verdict's notes count the expiries it checked.
func CheckLockDelay(ops []history.Op) Verdict {
	v := Verdict{Checker: LockDelay}
	byKey := map[grantKey][]history.Op{}
	grants := map[string][]history.Op{}
	for _, op := range ops {
		if op.Session == "" {
			continue
		}
		k := grantKey{op.Lock, op.Session}
		byKey[k] = append(byKey[k], op)
		if op.Kind == history.Acquire && op.Status == history.OK {
			grants[op.Lock] = append(grants[op.Lock], op)
		}
	}
	checked := 0
	for _, end := range ops {
		if end.Kind != history.End || !end.Expire || end.LockDelay <= 0 {
			continue
		}
		held, ok := heldAtEnd(byKey[grantKey{end.Lock, end.Session}], end)
		if !ok {
			continue
		}
		checked++
		until := end.Call + int64(float64(end.LockDelay)*(1-lockDelaySlack)) - int64(lockDelayMargin)
		for _, g := range grants[end.Lock] {
			if g.Session != end.Session && g.Token > held.Token && g.Return < until {
				v.addf("lock-delay broken on %s: %s (lock-delay %v) held token %d and may expire from %s on, yet %s was granted token %d by %s",
					end.Lock, short(end.Session), end.LockDelay, held.Token, history.Seconds(end.Call), short(g.Session), g.Token, history.Seconds(g.Return))
			}
		}
	}
	v.Cover(checked, "lock-delay expiries", "%d lock-delay expiries", checked)
	v.undecidedIfNone("no session surely expired holding a lock with a lock-delay: no expiry to check")
	return v
}

// heldAtEnd returns the grant the session surely held when end ended it,
// given the session's operations on the lock.
func heldAtEnd(ops []history.Op, end history.Op) (history.Op, bool) {
	var held history.Op
	ok := false
	for _, op := range ops {
		switch {
		case op.Kind == history.End:
		case op.Call > end.Call, op.Kind == history.Release:
			return history.Op{}, false
		case op.Kind == history.Acquire && op.Status == history.Unknown:
			return history.Op{}, false
		case op.Kind == history.Acquire && op.Status == history.OK:
			if op.Mode == "shared" || (ok && op.Token != held.Token) {
				return history.Op{}, false
			}
			held, ok = op, true
		}
	}
	return held, ok
}
