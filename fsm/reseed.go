package fsm

import "time"

// Reseed prepares a restored state to seed a new cluster (lease.Seed, for
// a restore from a backup). It forgets the member table, whose addresses
// are the old cluster's: the new cluster's nodes register themselves as
// they start, and a follower must not forward to an address of the old
// one meanwhile. And it shows every pending lock-delay and wait as ending
// its full length after now, because that is when the new cluster's first
// leader starts them at the earliest (it runs each timer for its full
// length from when it first sees it), whereas the times the old leader
// stamped may be long past. And it moves the applied index up to floor,
// if floor is higher, as if the entries up to floor had applied and
// changed nothing, so that the new cluster's entries, and the tokens they
// grant, begin above floor (a cluster that ran on after the backup may
// have granted tokens above the backup's index). Sessions, holders and
// their tokens, queues in their order, values, ACL tokens and request
// numbers stay as they were. The FSM's watchers are not woken: Reseed is
// for an FSM nothing serves yet.
func (f *FSM) Reseed(now time.Time, floor uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now = now.UTC()
	f.st.applied = max(f.st.applied, floor)
	clear(f.st.members)
	for _, s := range []*space{f.st.locks, f.st.elections} {
		for name := range s.timed {
			l, ok := s.objs.mut(name)
			if !ok {
				continue
			}
			if l.DelayIndex != 0 {
				l.DelayUntil = now.Add(l.Delay)
			}
			for i := range l.Waiters {
				l.Waiters[i].Deadline = now.Add(l.Waiters[i].Wait)
			}
		}
	}
}
