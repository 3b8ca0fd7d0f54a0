package validate

import (
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
)

// The leader measures a waiter's wait on its own clock, from the entry
// that queued it (a new leader restarts it at its full length: later, never
// earlier); the queue checker leaves the room lock-delay leaves for clock
// rates.
const (
	queueWaitSlack  = lockDelaySlack
	queueWaitMargin = lockDelayMargin
)

// CheckQueue checks the queues of locks, beyond the order of the grants
// (which fifo checks): a waiter whose request a read showed queued is
// either granted, or leaves the queue for a stated reason (its wait ran
// out, its session ended, it released), and no later waiter of the same
// lock is granted while it still waits ahead (docs/api.md: waiters are
// served first in, first out; a shared head is granted with every shared
// waiter right behind it, in the same entry).
//
// Each waiter a read saw is tied to its blocking acquire as fifo ties it
// (the acquire whose window contains the read's, with no earlier operation
// of unknown outcome of the session on the lock). For a waiter A that was
// not granted, the history bounds from below when A may have left the
// queue: the earliest of its wait running out (the acquire's invocation +
// its Wait, less the room left to clock rates), the invocation of an End
// of its session, and that of a release of the lock by its session
// (refused ones aside: they changed nothing). Until then A was queued, or
// (its outcome unknown) granted and holding. Then:
//
//   - dropped: A's acquire was refused (lock_held: its wait ran out)
//     before any of these moments;
//   - skipped: a waiter B the read saw behind A was granted, its grant
//     acknowledged before any of these moments, A not granted (refused),
//     or A exclusive or B exclusive (an A granted unbeknownst to its client
//     and holding would exclude B as well; only a shared B may join a
//     shared A).
//
// A waiter that was granted is fifo's business; the lock model has no
// queue, so neither breach is seen by any other checker.
func CheckQueue(ops []history.Op) Verdict {
	v := Verdict{Checker: Queue}
	bySession := map[grantKey][]history.Op{}
	leaves := map[grantKey][]history.Op{} // releases and ends: stated reasons to leave
	for _, op := range ops {              // in invocation order
		if op.Session == "" {
			continue
		}
		k := grantKey{op.Lock, op.Session}
		if op.Kind == history.Acquire || op.Kind == history.Release {
			bySession[k] = append(bySession[k], op)
		}
		if op.Kind == history.End || (op.Kind == history.Release && op.Status != history.Fail) {
			leaves[k] = append(leaves[k], op)
		}
	}
	// mayLeave is the earliest moment the history allows a's session to
	// have left the queue for a stated reason, and the reason.
	mayLeave := func(a history.Op) (int64, string) {
		at, why := history.Infinity, "it never may have"
		if a.Wait > 0 {
			at = a.Call + int64(float64(a.Wait)*(1-queueWaitSlack)) - int64(queueWaitMargin)
			why = "its wait of " + a.Wait.String() + " ran out"
		}
		for _, l := range leaves[grantKey{a.Lock, a.Session}] {
			if l.Call < at && l.Return >= a.Call {
				at, why = max(l.Call, a.Call), "it released the lock"
				if l.Kind == history.End {
					why = "its session ended"
				}
			}
		}
		return at, why
	}
	seen := map[int64]bool{}
	type pair struct{ a, b int64 }
	reported := map[pair]bool{}
	waiters, granted, refused, unknown, pairs := 0, 0, 0, 0, 0
	for _, r := range ops {
		if r.Kind != history.Read || r.Status != history.OK || len(r.Waiters) == 0 {
			continue
		}
		var queued []history.Op
		for _, s := range r.Waiters {
			a, ok := queuedAcquire(bySession[grantKey{r.Lock, s}], r)
			if !ok {
				continue
			}
			queued = append(queued, a)
			if seen[a.ID] {
				continue
			}
			seen[a.ID] = true
			waiters++
			switch a.Status {
			case history.OK:
				granted++
				continue
			case history.Unknown:
				unknown++
				continue
			}
			refused++
			if at, why := mayLeave(a); a.Code == api.CodeLockHeld && a.Return < at {
				v.addf("waiter dropped from %s's queue: a read at %s saw %s queued, and its acquire (wait %v, invoked at %s) was refused at %s, before %s (%s at the earliest)",
					r.Lock, history.Seconds(r.Return), short(a.Session), a.Wait, history.Seconds(a.Call), history.Seconds(a.Return), why, history.Seconds(at))
			}
		}
		for i, a := range queued {
			if a.Status == history.OK {
				continue
			}
			at, why := mayLeave(a)
			for _, b := range queued[i+1:] {
				if b.Status != history.OK || b.Session == a.Session {
					continue
				}
				p := pair{a.ID, b.ID}
				if !reported[p] {
					pairs++
				}
				if a.Status == history.Unknown && a.Mode == api.ModeShared && b.Mode == api.ModeShared {
					continue // a shared A granted unbeknownst to its client admits a shared B
				}
				if b.Return < at && !reported[p] {
					v.addf("waiter skipped in %s's queue: a read at %s saw %s queued ahead of %s, yet %s was granted token %d by %s while %s still waited (%s: not before %s; its acquire %s)",
						r.Lock, history.Seconds(r.Return), short(a.Session), short(b.Session), short(b.Session), b.Token, history.Seconds(b.Return),
						short(a.Session), why, history.Seconds(at), a.Status)
				}
				reported[p] = true
			}
		}
	}
	v.Cover(waiters, "queued waiters", "%d queued waiters (%d granted, %d refused, %d of unknown outcome); %d pairs of a waiter not granted ahead of a granted one",
		waiters, granted, refused, unknown, pairs)
	v.undecidedIfNone("no read saw a waiter whose blocking acquire it could be tied to")
	return v
}

// queuedAcquire returns, from ops (a session's acquires and releases of
// one lock, in invocation order), the blocking acquire that was surely the
// one queued when read r saw the session queued: one invoked before the
// read that returned after it, with no operation of unknown outcome before
// it (whose place could linger in the queue).
func queuedAcquire(ops []history.Op, r history.Op) (history.Op, bool) {
	for _, op := range ops {
		if op.Call >= r.Call {
			break
		}
		if op.Kind == history.Acquire && op.Wait > 0 && op.Return > r.Return {
			return op, true
		}
		if op.Status == history.Unknown {
			return history.Op{}, false
		}
	}
	return history.Op{}, false
}
