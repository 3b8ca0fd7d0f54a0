package fsm

import "time"

// Activity is what one entry did to the holders of locks (not elections),
// for the leader's metrics and logs: it changes nothing and is not part of
// the state. Like everything an entry returns, it is the same on every
// replica.
type Activity struct {
	// Grants counts the acquires granted as the entry applied them;
	// Handoffs the waiters granted because the lock became free (a
	// release, a session's end, the end of a lock-delay or of another
	// waiter's wait).
	Grants, Handoffs int
	// AfterExpiry names, in the order applied, the locks the entry handed
	// to a waiter because their holder's session expired: at once, or when
	// the lock-delay the expiry began ended.
	AfterExpiry []string
	// Holds has, for each holding the entry ended, how long it lasted:
	// from the wall time stamped on the entry that granted it to that of
	// this entry (0 if the second is earlier; leaders' clocks may differ).
	Holds []time.Duration
}

// Counts is the size of the state, for metrics: each is kept as commands
// change the state (and rebuilt by Restore), so reading them costs nothing
// however many objects there are.
type Counts struct {
	Sessions int
	// LockHolders counts the holders of every lock (a shared lock counts
	// each), LocksHeld the locks with at least one, LockWaiters the
	// acquires queued.
	LockHolders, LocksHeld, LockWaiters int
	// ElectionsLed counts the elections with a leader, ElectionWaiters the
	// campaigns queued.
	ElectionsLed, ElectionWaiters int
}

// Counts returns the counts of the current state.
func (f *FSM) Counts() Counts {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := f.st
	return Counts{
		Sessions:    st.sessions.len(),
		LockHolders: st.locks.holders, LocksHeld: st.locks.heldObjs, LockWaiters: st.locks.waiters,
		ElectionsLed: st.elections.heldObjs, ElectionWaiters: st.elections.waiters,
	}
}

// granted records in the entry's activity that l was granted, by a
// hand-off or at once.
func (s *space) granted(handoff bool) {
	switch {
	case s.act == nil:
	case handoff:
		s.act.Handoffs++
	default:
		s.act.Grants++
	}
}

// ended records in the entry's activity how long holder h held its lock.
func (s *space) ended(h Holder, o op) {
	if s.act != nil {
		s.act.Holds = append(s.act.Holds, max(o.now.Sub(h.AcquiredAt), 0))
	}
}

// handoffAfterExpiry hands l off as handoff does, and records it in the
// entry's activity when a waiter got it: l's holder expired, and this is
// the hand-off its expiry leads to.
func (s *space) handoffAfterExpiry(l *Lock, o op) {
	before := 0
	if s.act != nil {
		before = s.act.Handoffs
	}
	s.handoff(l, o)
	if s.act != nil && s.act.Handoffs > before {
		s.act.AfterExpiry = append(s.act.AfterExpiry, l.Name)
	}
}
