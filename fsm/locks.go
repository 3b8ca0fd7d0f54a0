package fsm

import "fmt"

// checkObject validates what every lock and election command shares: the
// session exists and a name is given.
func (st *state) checkObject(c Command) error {
	if !st.sessions.has(c.Session) {
		return sessionNotFound(c.Session)
	}
	if c.Name == "" {
		return fmt.Errorf("%w: %v: empty name", ErrBadCommand, c.Op)
	}
	return nil
}

// requestMode returns the mode c asks for: exclusive unless it says shared,
// and always exclusive for a campaign and for a slot of a semaphore.
func requestMode(s *space, o op, c Command) (Mode, error) {
	switch {
	case c.Limit < 0 || c.Limit > MaxLimit:
		return "", fmt.Errorf("%w: %v: limit %d (want 0, or 1 to %d for a semaphore)", ErrBadCommand, c.Op, c.Limit, MaxLimit)
	case c.Limit > 0 && (s.election || o.legacy):
		return "", fmt.Errorf("%w: %v: a limit on an election or in a version-1 entry", ErrBadCommand, c.Op)
	case c.Limit > 0 && c.Mode == Shared:
		return "", fmt.Errorf("%w: %v: a semaphore's slots are not shared: a limit takes no mode shared", ErrBadCommand, c.Op)
	case c.Mode == "" || c.Mode == Exclusive:
		return Exclusive, nil
	case c.Mode == Shared && !s.election:
		return Shared, nil
	}
	return "", fmt.Errorf("%w: %v: mode %q", ErrBadCommand, c.Op, c.Mode)
}

// limitConflict refuses an acquire whose limit is not that of l, if l
// exists (it has holders, waiters or a pending lock-delay).
func limitConflict(l *Lock, o op, c Command) error {
	if c.Limit == l.Limit || !l.exists(o) {
		return nil
	}
	return &LimitError{Name: c.Name, Limit: l.Limit, Asked: c.Limit}
}

// acquireAct is what an acquire does to the state.
type acquireAct uint8

const (
	answer  acquireAct = iota // nothing: the plan's res is the answer
	requeue                   // the session keeps its place; its wait restarts
	grant
	enqueue
)

// acquirePlan is what an acquire does, decided from the state before it
// changes anything.
type acquirePlan struct {
	note bool // record the request number first (a new one)
	act  acquireAct
	res  Result // the answer, when act is answer
	mode Mode
}

// pure reports whether the plan changes nothing.
func (p acquirePlan) pure() bool { return !p.note && p.act == answer }

// acquire runs OpAcquire on locks and OpCampaign on elections.
func (st *state) acquire(s *space, o op, c Command) Result {
	p := st.planAcquire(s, o, c)
	if p.note {
		st.noteSeq(s, c)
	}
	if p.act == answer {
		return p.res
	}
	l := s.lookup(c.Name)
	l.Limit = c.Limit // the same, unless l is new
	value := ""
	if s.election {
		value = c.Value
	}
	switch p.act {
	case requeue:
		s.requeue(l, s.queued(l, c.Session), o, c)
		return Result{}
	case grant:
		s.grant(l, c.Session, p.mode, value, o)
		s.granted(false)
		s.settle(l, o)
		return Result{Granted: true, Token: l.Holders[len(l.Holders)-1].Token}
	}
	s.enqueue(l, Waiter{Session: c.Session, Mode: p.mode, Deadline: o.now.Add(c.Wait), Wait: c.Wait, Since: o.index, Value: value})
	s.settle(l, o)
	return Result{}
}

// planAcquire decides what an acquire does, reading the state only (so
// that Refusal can use it under a read lock). An acquire whose request
// number was applied already (a retry, or an abandoned request arriving
// late) is answered from the current state, as planRepeated says, and
// never grants anew.
func (st *state) planAcquire(s *space, o op, c Command) acquirePlan {
	if err := st.checkObject(c); err != nil {
		return acquirePlan{res: Result{Err: err}}
	}
	mode, err := requestMode(s, o, c)
	if err != nil {
		return acquirePlan{res: Result{Err: err}}
	}
	if c.Wait < 0 {
		return acquirePlan{res: refuse("%v: negative wait %v", c.Op, c.Wait)}
	}
	p := acquirePlan{mode: mode}
	l := s.peek(c.Name)
	if st.repeated(s, c) && !o.unsafe.forgetSeq() {
		return st.planRepeated(s, l, p, o, c)
	}
	p.note = c.Seq != 0
	// Refused with its number recorded, as a try of a held lock is: the
	// lock may later exist with this limit, and a late copy of a request
	// its client was told no to must not be granted then.
	if err := limitConflict(l, o, c); err != nil {
		p.res = Result{Err: err}
		return p
	}
	if i := l.holder(c.Session); i >= 0 {
		// A retry of an acquire that already succeeded: same token, no change.
		if l.Mode != mode {
			p.res = Result{Err: fmt.Errorf("%w: %s is held as %s", ErrModeConflict, c.Name, l.Mode)}
		} else {
			p.res = Result{Granted: true, Token: l.Holders[i].Token}
		}
		return p
	}
	if i := s.queued(l, c.Session); i >= 0 {
		return planRequeue(l, i, p, c)
	}
	// Queueing behind waiters even when the mode is compatible keeps an
	// exclusive waiter from being starved by a stream of shared requests.
	free := len(l.Waiters) == 0 && !l.delayed(o) && l.admits(mode)
	switch {
	case free || o.unsafe.grantHeld() && mode == Exclusive && !s.election:
		p.act = grant
	case c.Wait > 0:
		p.act = enqueue
	case l.waitsOnDelay(o):
		p.res = Result{Err: s.delayError(l)}
	default:
		p.res = Result{Err: fmt.Errorf("%w: %s", ErrLockHeld, c.Name)}
	}
	return p
}

// planRequeue decides what an acquire by a session already queued for l
// does: it is a client retrying after a lost answer, and keeps its place
// (requeue), unless it asks for the other mode or does not want to wait.
func planRequeue(l *Lock, i int, p acquirePlan, c Command) acquirePlan {
	switch w := l.Waiters[i]; {
	case w.Mode != p.mode:
		p.res = Result{Err: fmt.Errorf("%w: %s is queued for as %s", ErrQueuedInOtherMode, c.Name, w.Mode)}
	case c.Wait == 0:
		p.res = Result{Err: fmt.Errorf("%w: %s", ErrStillQueued, c.Name)}
	default:
		p.act = requeue
	}
	return p
}

// requeue restarts the wait of the i-th waiter of l, which asked again: it
// keeps its place, and its wait restarts at the longest length asked for,
// so it ends no earlier than either request's would have. A campaign's
// value stays as first queued, as a leader's does on a repeated campaign.
// (A version-1 entry moved only the shown deadline, and only later; it
// still does.)
func (s *space) requeue(l *Lock, i int, o op, c Command) {
	w := &l.Waiters[i]
	later := o.now.Add(c.Wait).After(w.Deadline)
	if later {
		w.Deadline = o.now.Add(c.Wait)
	}
	if later || !o.legacy {
		w.Wait = max(w.Wait, c.Wait)
		w.Since = o.index
		s.settle(l, o)
	}
}

// release runs OpRelease, which older entries carry (new ones carry
// OpLetGo): the holder lets go and the queue moves up; a session that is
// only queued is refused and stays queued.
func (st *state) release(s *space, o op, c Command) Result {
	if err := st.checkObject(c); err != nil {
		return Result{Err: err}
	}
	l := s.lookup(c.Name)
	i := l.holder(c.Session)
	if i < 0 {
		return Result{Err: fmt.Errorf("%w: %s", ErrNotHolder, c.Name)}
	}
	s.dropHolder(l, i, o)
	s.handoff(l, o)
	s.settle(l, o)
	return Result{}
}

// cancelWait runs OpCancelWait and OpCancelCampaign. A waiter that was
// granted before its cancel arrived learns its token instead, so that the
// client can release what it did not know it had.
func (st *state) cancelWait(s *space, o op, c Command) Result {
	if err := st.checkObject(c); err != nil {
		return Result{Err: err}
	}
	l := s.lookup(c.Name)
	if i := l.holder(c.Session); i >= 0 {
		return Result{Granted: true, Token: l.Holders[i].Token}
	}
	if i := s.queued(l, c.Session); i >= 0 {
		// Removing the head can unblock the waiters behind it.
		s.dropWaiter(l, i)
		s.handoff(l, o)
		s.settle(l, o)
	}
	return Result{}
}

// proclaim runs OpProclaim: the leader sets a new value.
func (st *state) proclaim(o op, c Command) Result {
	if err := st.checkObject(c); err != nil {
		return Result{Err: err}
	}
	l := st.elections.lookup(c.Name)
	if l.holder(c.Session) < 0 {
		return Result{Err: fmt.Errorf("%w: %s", ErrNotHolder, c.Name)}
	}
	l.Value = c.Value
	st.elections.settle(l, o)
	return Result{}
}

// timersDue runs OpTimersDue: each named timer that still runs ends, in the
// order given.
func (st *state) timersDue(o op, c Command) Result {
	if len(c.Timers) == 0 || len(c.Timers) > MaxTimersPerEntry {
		return refuse("%v: %d timers (want 1 to %d)", c.Op, len(c.Timers), MaxTimersPerEntry)
	}
	for _, r := range c.Timers {
		if r.Name == "" || r.Armed == 0 {
			return refuse("%v: timer without a name or a starting entry", c.Op)
		}
	}
	for _, r := range c.Timers {
		s := st.locks
		if r.Election {
			s = st.elections
		}
		s.timeUp(r, o)
	}
	return Result{}
}

// proclaimed reports whether the session of c leads its election with c's
// value: then a repeat of that proclaim gets the success the first got.
func (st *state) proclaimed(c Command) bool {
	l := st.elections.peek(c.Name)
	return l.holder(c.Session) >= 0 && l.Value == c.Value
}

// letGo runs OpLetGo on locks and OpResign on elections: a holder lets
// go, and a queued session leaves the queue. (A caller that hung up keeps
// its place until its wait runs out, so that its retry finds it; letting
// go is how a client that gave up ends that place at once.)
func (st *state) letGo(s *space, o op, c Command) Result {
	if err := st.checkObject(c); err != nil {
		return Result{Err: err}
	}
	l := s.lookup(c.Name)
	if l.holder(c.Session) >= 0 {
		return st.release(s, o, c)
	}
	if s.queued(l, c.Session) >= 0 {
		return st.cancelWait(s, o, c)
	}
	return Result{Err: fmt.Errorf("%w: %s", ErrNotHolder, c.Name)}
}

// planRepeated answers an acquire whose request number was applied already
// from the current state: the session's holding or its place in the queue
// if it still has them, and otherwise a refusal. It never grants anew.
func (st *state) planRepeated(s *space, l *Lock, p acquirePlan, o op, c Command) acquirePlan {
	if i := l.holder(c.Session); i >= 0 && l.Mode == p.mode && l.Limit == c.Limit {
		p.res = Result{Granted: true, Token: l.Holders[i].Token}
		if o.unsafe.refuseRepeat() {
			p.res = Result{Err: fmt.Errorf("%w: %s: request %d repeats one already applied", ErrLockHeld, c.Name, c.Seq)}
		}
		return p
	}
	if i := s.queued(l, c.Session); i >= 0 {
		return planRequeue(l, i, p, c)
	}
	// Refused, and told as the current state says, in the order a new
	// try's refusal is: in a lock-delay, held or queued for by others, or
	// free (the first request was applied, and whatever it got, this one
	// is not applied again).
	switch {
	case l.waitsOnDelay(o):
		p.res = Result{Err: s.delayError(l)}
	case l.busy():
		p.res = Result{Err: fmt.Errorf("%w: %s: request %d repeats one already applied", ErrLockHeld, c.Name, c.Seq)}
	default:
		p.res = Result{Err: fmt.Errorf("%w: %s: request %d", ErrRepeated, c.Name, c.Seq)}
	}
	return p
}
