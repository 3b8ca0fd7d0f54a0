package fsm

// Unsafe holds switches that each break one guarantee of the state machine
// on purpose, so that the fault harness can show that its checkers catch
// the bug. They are never on in a real deployment, and every replica must
// be set alike, or the replicas diverge: each acts only on the replicated
// state and the entry's index.
type Unsafe struct {
	// LowerToken gives every grant made by an entry whose index is a
	// multiple of lowerTokenEvery half that index as its token: lower than
	// the token of any grant made since, the same lock's earlier grants
	// among them when the lock is busy.
	LowerToken bool
	// EarlyLockDelay ends each lock-delay at a tenth of its length: the
	// timers the leader runs for lock-delays are that much shorter.
	EarlyLockDelay bool
	// BreakFIFO hands a freed lock to the last of its waiters instead of
	// the first.
	BreakFIFO bool
	// ForgetSeq makes an acquire ignore its request number: a repeat of an
	// acquire already applied (a retry, or an abandoned request arriving
	// late) is treated as a new request, and grants anew.
	ForgetSeq bool
	// SkipWaiter makes a hand-off by an entry whose index is a multiple
	// of skipWaiterEvery, with two or more waiters queued, drop the head
	// of the queue without granting it, and grant the next.
	SkipWaiter bool
	// RefuseRepeat answers an acquire repeated with the request number it
	// was granted with by a refusal (lock_held) while the session still
	// holds the lock, instead of the first answer.
	RefuseRepeat bool
}

// skipWaiterEvery is how often SkipWaiter drops a queue's head.
const skipWaiterEvery = 3

// lowerTokenEvery is how often LowerToken lowers a grant's token.
const lowerTokenEvery = 4

// SetUnsafe sets the switches of u (see Unsafe).
func (f *FSM) SetUnsafe(u Unsafe) {
	f.mu.Lock()
	f.unsafe = u
	f.mu.Unlock()
}

// grantToken is the token a grant made by entry o gets: the entry's index,
// unless the LowerToken switch lowers it.
func (s *space) grantToken(o op) uint64 {
	if !o.unsafe.LowerToken || o.index%lowerTokenEvery != 0 {
		return o.index
	}
	return o.index / 2
}

// skipHead drops the head of l's queue unseen by a hand-off, under the
// SkipWaiter switch, and reports whether it did.
func (s *space) skipHead(l *Lock, o op) bool {
	if !o.unsafe.SkipWaiter || len(l.Waiters) < 2 || o.index%skipWaiterEvery != 0 {
		return false
	}
	s.dropWaiter(l, 0)
	return true
}

// nextWaiter is the index in l's queue of the waiter a hand-off considers:
// the head, or the last one under the BreakFIFO switch.
func nextWaiter(l *Lock, o op) int {
	if o.unsafe.BreakFIFO {
		return len(l.Waiters) - 1
	}
	return 0
}
