package fsm

import (
	"maps"
	"slices"
	"time"
)

// space is one namespace of lock objects: the locks proper or the elections.
// Both follow the same mechanics; elections are always exclusive and carry
// a value.
//
// Every change to an object goes through the methods below, which keep the
// reverse indexes and the timed set in step with the objects themselves.
type space struct {
	election bool
	objs     *cowMap[*Lock]
	// index is the index of the last change to any object, deletions
	// included, so a missing object reads with a ModifyIndex that never
	// goes backwards and no tombstones are needed.
	index uint64
	// timed names the objects with waiters or a lock-delay: the only ones
	// with timers, and the only ones a (version-1) tick can change.
	timed map[string]struct{}
	// held and waiting map a session to the names it holds or waits for,
	// so that ending a session does not scan every object.
	held    map[string]map[string]struct{}
	waiting map[string]map[string]struct{}
	// touched is the state's list of topics the current entry changed.
	touched *[]Topic
	// holders counts the holders of every object, heldObjs the objects
	// with one, waiters the queued requests: kept by grant, dropHolder,
	// enqueue and dropWaiter (and load), for metrics (Counts).
	holders, heldObjs, waiters int
	// act is the state's record of what the current entry did to holders
	// (Activity); nil for elections, which it does not cover.
	act *Activity
}

func newSpace(election bool) *space {
	return &space{
		election: election,
		objs:     newCowMap(cloneLock),
		timed:    make(map[string]struct{}),
		held:     make(map[string]map[string]struct{}),
		waiting:  make(map[string]map[string]struct{}),
	}
}

// peek returns the named object, or a new free one, to read only.
func (s *space) peek(name string) *Lock {
	if l, ok := s.objs.get(name); ok {
		return l
	}
	return &Lock{Name: name}
}

// lookup returns the named object, to change in place (a copy of its own
// if a snapshot shares it), or a new free one that is not stored until
// settle decides it must exist.
func (s *space) lookup(name string) *Lock {
	if l, ok := s.objs.mut(name); ok {
		return l
	}
	return &Lock{Name: name}
}

// settle records that l changed in entry o: it stamps the indexes, stores
// l, or deletes it when it has no holders, no waiters and no pending delay.
func (s *space) settle(l *Lock, o op) {
	l.ModifyIndex = o.index
	s.index = o.index
	s.touch(ObjectTopic(s.election, l.Name))
	s.touch(SpaceTopic(s.election))
	if !l.exists(o) {
		s.objs.del(l.Name)
		delete(s.timed, l.Name)
		return
	}
	s.objs.set(l.Name, l)
	if l.timed() {
		s.timed[l.Name] = struct{}{}
	} else {
		delete(s.timed, l.Name)
	}
}

// grant makes session a holder with the entry's index as its token. It is
// only called when nothing delays the grant, so a stale delay goes.
func (s *space) grant(l *Lock, session string, mode Mode, value string, o op) {
	if len(l.Holders) == 0 {
		s.heldObjs++
	}
	s.holders++
	l.Holders = append(l.Holders, Holder{Session: session, Token: o.unsafe.grantToken(o.index), AcquiredAt: o.now})
	l.Mode = mode
	if s.election {
		l.Value = value
	}
	l.endDelay()
	s.link(s.held, session, l.Name)
}

// dropHolder removes the i-th holder. A lock nobody holds has no mode, and
// an election without a leader has no value. (A semaphore keeps its limit
// while it exists.)
func (s *space) dropHolder(l *Lock, i int, o op) {
	s.unlink(s.held, l.Holders[i].Session, l.Name)
	s.ended(l.Holders[i], o)
	s.holders--
	l.Holders = without(l.Holders, i)
	if len(l.Holders) == 0 {
		s.heldObjs--
		l.Mode = ""
		l.Value = ""
	}
}

func (s *space) enqueue(l *Lock, w Waiter) {
	l.Waiters = append(l.Waiters, w)
	s.waiters++
	s.link(s.waiting, w.Session, l.Name)
}

func (s *space) dropWaiter(l *Lock, i int) {
	s.unlink(s.waiting, l.Waiters[i].Session, l.Name)
	s.waiters--
	l.Waiters = without(l.Waiters, i)
}

// dropExpired removes the waiters whose shown deadline is not after now and
// reports whether there were any. Only version-1 entries do this.
func (s *space) dropExpired(l *Lock, now time.Time) bool {
	dropped := false
	for i := 0; i < len(l.Waiters); {
		if l.Waiters[i].Deadline.After(now) {
			i++
			continue
		}
		s.dropWaiter(l, i)
		dropped = true
	}
	return dropped
}

// handoff grants l to the head of its queue, and for a shared head to every
// shared waiter right behind it, or for a semaphore to as many waiters as
// it has grantable slots, in the entry that freed it, so a hand-off costs
// one commit. Nothing is granted inside a lock-delay, nor on a delayed
// slot. It reports whether l changed.
func (s *space) handoff(l *Lock, o op) bool {
	if l.delayed(o) {
		return false
	}
	// Only a version-1 entry gets here with a delay (one its wall time
	// says is over) or with waiters whose shown deadline passed.
	changed := l.DelayIndex != 0
	l.endDelay()
	if o.legacy && s.dropExpired(l, o.now) {
		changed = true
	}
	if o.unsafe.skipHead(s, l, o.index) {
		changed = true
	}
	for len(l.Waiters) > 0 {
		i := o.unsafe.nextWaiter(l)
		w := l.Waiters[i]
		if !l.admits(w.Mode) {
			break
		}
		s.dropWaiter(l, i)
		s.grant(l, w.Session, w.Mode, w.Value, o)
		s.granted(true)
		changed = true
		if w.Mode != Shared && l.Limit == 0 {
			break
		}
	}
	return changed
}

// tick runs a version-1 OpTick: it ends the lock-delays and drops the
// waiters whose shown wall-clock end is not after the entry's wall time,
// then hands off what that freed, object by object in name order.
func (s *space) tick(o op) {
	for _, name := range slices.Sorted(maps.Keys(s.timed)) {
		l, _ := s.objs.mut(name)
		dropped := s.dropExpired(l, o.now)
		if s.handoff(l, o) || dropped {
			s.settle(l, o)
		}
	}
}

// evict takes from session everything it holds or waits for in s, hands
// off each object in name order and returns the names it held, sorted. With
// delay > 0 (expiry) the objects it held get a lock-delay first (on a
// semaphore, the slot it held does), so nobody, not even a waiter, gets
// them before it ends. expired says the session expired (rather than was
// destroyed), for the entry's Activity.
func (s *space) evict(session string, delay time.Duration, expired bool, o op) []string {
	held := refs(s.held, session)
	names := slices.Concat(held, refs(s.waiting, session))
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		l, _ := s.objs.mut(name)
		held := false
		if i := l.holder(session); i >= 0 {
			held = true
			s.dropHolder(l, i, o)
			switch {
			case delay > 0 && l.Limit > 0:
				l.Slots = append(l.Slots, SlotDelay{Session: session, Index: o.index, Length: delay, Until: o.now.Add(delay)})
			case delay > 0:
				s.startDelay(l, delay, o)
			}
		}
		if i := s.queued(l, session); i >= 0 {
			s.dropWaiter(l, i)
		}
		if held && expired {
			s.handoffAfterExpiry(l, o)
		} else {
			s.handoff(l, o)
		}
		s.settle(l, o)
	}
	return held
}

// holder returns the index of session among the holders, or -1.
func (l *Lock) holder(session string) int {
	return slices.IndexFunc(l.Holders, func(h Holder) bool { return h.Session == session })
}

// waiter returns the index of session in the queue, or -1.
func (l *Lock) waiter(session string) int {
	return slices.IndexFunc(l.Waiters, func(w Waiter) bool { return w.Session == session })
}

// queued returns the index of session in l's queue, or -1, looking in the
// reverse index first: a session that is not queued (the common case when
// it asks) costs nothing however long the queue.
func (s *space) queued(l *Lock, session string) int {
	if !has(s.waiting, session, l.Name) {
		return -1
	}
	return l.waiter(session)
}

// startDelay puts l in a lock-delay of length delay from entry o, or, if
// one is in force already, restarts it at the longer of the two lengths: it
// then ends no earlier than either would have.
func (s *space) startDelay(l *Lock, delay time.Duration, o op) {
	if until := o.now.Add(delay); until.After(l.DelayUntil) {
		l.DelayUntil = until
	}
	l.Delay = max(l.Delay, delay)
	l.DelayIndex = o.index
}

// endDelay clears l's lock-delay, if any.
func (l *Lock) endDelay() {
	l.DelayUntil, l.Delay, l.DelayIndex = time.Time{}, 0, 0
}

// delayed reports whether a lock-delay forbids granting l in entry o: while
// one is in force, that is until the OpTimersDue that ends it. A version-1
// entry instead compares its own wall time with the shown end, as the
// build that wrote it did.
func (l *Lock) delayed(o op) bool {
	if o.legacy {
		return l.DelayIndex != 0 && o.now.Before(l.DelayUntil)
	}
	return l.DelayIndex != 0
}

// exists reports whether l must be kept in entry o: it has holders,
// waiters, a lock-delay in force or a delayed slot.
func (l *Lock) exists(o op) bool {
	return len(l.Holders) > 0 || len(l.Waiters) > 0 || l.delayed(o) || len(l.Slots) > 0
}

// timed reports whether l has timers: waiters, a lock-delay or a delayed
// slot.
func (l *Lock) timed() bool {
	return len(l.Waiters) > 0 || l.DelayIndex != 0 || len(l.Slots) > 0
}

// waitsOnDelay reports whether only a lock-delay keeps l from being
// granted in entry o: nobody holds it and a lock-delay is in force, or,
// for a semaphore, every slot nobody holds is delayed and one is.
func (l *Lock) waitsOnDelay(o op) bool {
	if l.Limit > 0 {
		return len(l.Slots) > 0 && len(l.Holders)+len(l.Slots) >= l.Limit
	}
	return len(l.Holders) == 0 && l.delayed(o)
}

// busy reports whether l is held or queued for, so that a try by another
// session would not be granted for that reason: a lock with holders or
// waiters, a semaphore with waiters or every slot held or delayed.
func (l *Lock) busy() bool {
	if l.Limit > 0 {
		return len(l.Waiters) > 0 || len(l.Holders)+len(l.Slots) >= l.Limit
	}
	return len(l.Holders) > 0 || len(l.Waiters) > 0
}

// delayError describes l's lock-delay in space s: for a semaphore, that of
// the delayed slot that started first.
func (s *space) delayError(l *Lock) *DelayError {
	if l.Limit > 0 && len(l.Slots) > 0 {
		d := l.Slots[0]
		return &DelayError{Ref: d.Ref(l.Name), Length: d.Length, Until: d.Until}
	}
	return &DelayError{
		Ref:    TimerRef{Election: s.election, Name: l.Name, Armed: l.DelayIndex},
		Length: l.Delay,
		Until:  l.DelayUntil,
	}
}

// PendingDelay returns the lock-delay that alone keeps l from being
// granted now (see waitsOnDelay), or nil: what a refused try would name.
func (l *Lock) PendingDelay(election bool) *DelayError {
	if !l.waitsOnDelay(op{}) {
		return nil
	}
	s := space{election: election}
	return s.delayError(l)
}

// timers appends the pending timers of s, in name order, each object's
// lock-delay, then its delayed slots in the order they started, then its
// waiters in queue order.
func (s *space) timers(out []Timer) []Timer {
	for _, name := range slices.Sorted(maps.Keys(s.timed)) {
		l, _ := s.objs.get(name)
		if l.DelayIndex != 0 {
			out = append(out, Timer{TimerRef{Election: s.election, Name: name, Armed: l.DelayIndex}, l.Delay})
		}
		for _, d := range l.Slots {
			out = append(out, Timer{d.Ref(name), d.Length})
		}
		for _, w := range l.Waiters {
			out = append(out, Timer{TimerRef{Election: s.election, Name: name, Session: w.Session, Armed: w.Since}, w.Wait})
		}
	}
	return out
}

// timeUp ends the timer r names if it is still the one running: the
// lock-delay or a slot's (then the queue may move up) or the waiter's wait
// (it leaves the queue, which may unblock those behind it). A ref to a
// timer that was restarted or has ended already changes nothing.
func (s *space) timeUp(r TimerRef, o op) {
	l, ok := s.objs.mut(r.Name)
	if !ok {
		return
	}
	if r.Slot {
		i := slices.IndexFunc(l.Slots, func(d SlotDelay) bool { return d.Session == r.Session && d.Index == r.Armed })
		if i < 0 {
			return
		}
		l.Slots = without(l.Slots, i)
		s.handoffAfterExpiry(l, o)
		s.settle(l, o)
		return
	}
	if r.Session == "" {
		if l.DelayIndex != r.Armed {
			return
		}
		// Only an expiry starts a lock-delay.
		l.endDelay()
		s.handoffAfterExpiry(l, o)
		s.settle(l, o)
		return
	}
	i := s.queued(l, r.Session)
	if i < 0 || l.Waiters[i].Since != r.Armed {
		return
	}
	s.dropWaiter(l, i)
	s.handoff(l, o)
	s.settle(l, o)
}

// admits reports whether the current holders leave room for one in mode:
// anyone may take a free lock, and shared holders admit more shared ones;
// a semaphore admits one more while it has a slot neither held nor
// delayed.
func (l *Lock) admits(mode Mode) bool {
	if l.Limit > 0 {
		return len(l.Holders)+len(l.Slots) < l.Limit
	}
	return len(l.Holders) == 0 || (mode == Shared && l.Mode == Shared)
}

// without removes element i, keeping empty slices nil so that equal states
// compare and encode equal. Removing the head, as every hand-off does,
// moves nothing.
func without[T any](s []T, i int) []T {
	switch {
	case len(s) == 1:
		return nil
	case i == 0:
		var zero T
		s[0] = zero
		return s[1:]
	}
	return slices.Delete(s, i, i+1)
}

// link and unlink keep a reverse index (held or waiting) and record the
// change of the session's standing on the object.
func (s *space) link(m map[string]map[string]struct{}, session, name string) {
	addRef(m, session, name)
	s.touch(StandingTopic(s.election, name, session))
}

func (s *space) unlink(m map[string]map[string]struct{}, session, name string) {
	delete(m[session], name)
	if len(m[session]) == 0 {
		delete(m, session)
	}
	s.touch(StandingTopic(s.election, name, session))
}

func addRef(m map[string]map[string]struct{}, session, name string) {
	if m[session] == nil {
		m[session] = make(map[string]struct{})
	}
	m[session][name] = struct{}{}
}

func has(m map[string]map[string]struct{}, session, name string) bool {
	_, ok := m[session][name]
	return ok
}

// refs returns the names session has in m, sorted.
func refs(m map[string]map[string]struct{}, session string) []string {
	if len(m[session]) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m[session]))
}
