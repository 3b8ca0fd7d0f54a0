package validate

import "github.com/lockd/lockd/jepsen/history"

// CheckFIFO checks that a freed lock goes to the waiters in the order they
// queued: when a read saw session A queued ahead of session B, B's grant
// has no lower token than A's (tokens are the indexes of the granting
// entries, so the lower token is the earlier grant).
//
// Only what the server said is used. A queue is only ever appended to, and
// a retry of an acquire keeps its place, so two waiters a read shows in
// order queued in that order. Each queued session is tied to the blocking
// acquire of that session whose window contains the read's window, and
// only if no earlier operation of the session on the lock had an unknown
// outcome (whose place could linger in the queue). Only acquires that
// succeeded are compared: a successful blocking acquire is one request
// (one place in the queue, kept across retries), so the waiter stayed
// queued from the read until its grant; a waiter whose wait ran out, whose
// session ended or whose outcome is unknown left at a moment the history
// does not tell, and is never compared. Lock-delays hold every waiter
// back alike, so they cannot reorder a queue either.
//
// The verdict's notes count the queue observations and the hand-offs (the
// successful acquires a read saw queued first).
func CheckFIFO(ops []history.Op) Verdict {
	v := Verdict{Checker: FIFO}
	bySession := map[grantKey][]history.Op{}
	for _, op := range ops { // in invocation order
		if op.Session != "" && (op.Kind == history.Acquire || op.Kind == history.Release) {
			k := grantKey{op.Lock, op.Session}
			bySession[k] = append(bySession[k], op)
		}
	}
	observations, pairs := 0, 0
	handoffs := map[int64]bool{}
	for _, r := range ops {
		if r.Kind != history.Read || r.Status != history.OK || len(r.Waiters) == 0 {
			continue
		}
		observations++
		var queued []history.Op
		for _, s := range r.Waiters {
			if op, ok := queuedAcquire(bySession[grantKey{r.Lock, s}], r); ok && op.Status == history.OK {
				queued = append(queued, op)
				handoffs[op.ID] = true
			}
		}
		for i, a := range queued {
			for _, b := range queued[i+1:] {
				pairs++
				if b.Token < a.Token {
					v.addf("FIFO broken on %s: a read at %s saw %s queued ahead of %s, yet %s was granted token %d before %s got %d",
						r.Lock, history.Seconds(r.Return), short(a.Session), short(b.Session), short(b.Session), b.Token, short(a.Session), a.Token)
				}
			}
		}
	}
	v.Cover(pairs, "ordered pairs of waiters", "%d ordered pairs of waiters in %d queue observations; %d hand-offs seen",
		pairs, observations, len(handoffs))
	v.undecidedIfNone("no read saw two waiters queued that were both granted: no ordered pair of waiters to check")
	return v
}
