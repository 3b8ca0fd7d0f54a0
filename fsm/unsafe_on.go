//go:build lockd_unsafe

package fsm

// This file exists only in a build with the lockd_unsafe tag (the fault
// harness's): it holds the state machine's unsafe switches and what they
// do. A default build has unsafe_off.go instead, whose hooks are constants
// the compiler folds away, so that no binary built for production can
// break a guarantee of the state machine, whatever it is started with.

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
	// KVForgetSeq makes a write of the namespace (a put, a delete, a
	// transaction) ignore its request number: a repeat of one already
	// applied is applied again instead of refused as repeated.
	KVForgetSeq bool
	// StaleGuard accepts a fenced write (a guard) whose token is not the
	// lock's holder's, as long as the token is not 0: a deposed holder's
	// late write, or one sent after its release, is applied.
	StaleGuard bool
	// KeepEphemeral makes the end of a session leave its ephemeral keys
	// whose create index is even in place, as keys of no session, without
	// an event: they outlive their session.
	KeepEphemeral bool
}

// unsafeSwitches is the switches an FSM is set with (SetUnsafe,
// SetUnsafeGrantHeld), which every entry applied carries in its op.
type unsafeSwitches struct {
	u    Unsafe
	held bool // SetUnsafeGrantHeld
}

// skipWaiterEvery is how often SkipWaiter drops a queue's head.
const skipWaiterEvery = 3

// lowerTokenEvery is how often LowerToken lowers a grant's token.
const lowerTokenEvery = 4

// SetUnsafe sets the switches of u (see Unsafe).
func (f *FSM) SetUnsafe(u Unsafe) {
	f.mu.Lock()
	f.unsafe.u = u
	f.mu.Unlock()
}

// SetUnsafeGrantHeld makes the FSM grant an exclusive acquire even when
// another session holds the lock. It breaks mutual exclusion on purpose, so
// that the fault harness can show its checkers catch that; it is never on
// in a real deployment. Every replica must be set alike, or they diverge.
func (f *FSM) SetUnsafeGrantHeld(on bool) {
	f.mu.Lock()
	f.unsafe.held = on
	f.mu.Unlock()
}

// grantHeld reports whether an exclusive acquire is granted over the
// current holders (SetUnsafeGrantHeld).
func (s unsafeSwitches) grantHeld() bool { return s.held }

// forgetSeq reports whether an acquire ignores its request number (ForgetSeq).
func (s unsafeSwitches) forgetSeq() bool { return s.u.ForgetSeq }

// refuseRepeat reports whether a holder's repeated acquire is refused
// (RefuseRepeat).
func (s unsafeSwitches) refuseRepeat() bool { return s.u.RefuseRepeat }

// kvForgetSeq reports whether a namespace write ignores its request
// number (KVForgetSeq).
func (s unsafeSwitches) kvForgetSeq() bool { return s.u.KVForgetSeq }

// staleGuard reports whether a guard with a token that is not the
// holder's is accepted (StaleGuard).
func (s unsafeSwitches) staleGuard(g Guard) bool { return s.u.StaleGuard && g.Token != 0 }

// keepEphemeral reports whether the end of its session leaves the
// ephemeral key kv in place (KeepEphemeral).
func (s unsafeSwitches) keepEphemeral(kv *KV) bool { return s.u.KeepEphemeral && kv.CreateIndex%2 == 0 }

// grantToken is the token a grant made by the entry at index gets: the
// index, unless the LowerToken switch lowers it.
func (s unsafeSwitches) grantToken(index uint64) uint64 {
	if !s.u.LowerToken || index%lowerTokenEvery != 0 {
		return index
	}
	return index / 2
}

// skipHead drops the head of l's queue unseen by a hand-off made by the
// entry at index, under the SkipWaiter switch, and reports whether it did.
func (s unsafeSwitches) skipHead(sp *space, l *Lock, index uint64) bool {
	if !s.u.SkipWaiter || len(l.Waiters) < 2 || index%skipWaiterEvery != 0 {
		return false
	}
	sp.dropWaiter(l, 0)
	return true
}

// nextWaiter is the index in l's queue of the waiter a hand-off considers:
// the head, or the last one under the BreakFIFO switch.
func (s unsafeSwitches) nextWaiter(l *Lock) int {
	if s.u.BreakFIFO {
		return len(l.Waiters) - 1
	}
	return 0
}

// shortenLockDelays cuts the lock-delays among timers (those of no
// session, and those of a semaphore's slots) to a tenth of their length,
// under EarlyLockDelay.
func (s unsafeSwitches) shortenLockDelays(timers []Timer) {
	if !s.u.EarlyLockDelay {
		return
	}
	for i := range timers {
		if timers[i].IsDelay() {
			timers[i].Length /= 10
		}
	}
}
