package fsm

import "fmt"

// Request numbers. A client stamps each lock or election operation of a
// session with a number that grows from one operation to the next and stays
// the same when it retries one (Command.Seq). The state machine remembers,
// per session and object, the highest number applied, and a command whose
// number is not above it repeats something already done: it is answered
// from the current state and changes nothing.
//
// Why: an HTTP request a client abandoned (its node was paused, the
// connection hung) can still reach the leader long after the client moved
// on. Without the numbers, such a late acquire re-grants a lock the client
// has since released, and a late release drops a holding the client has
// since taken again. This is the client-session table of the Raft thesis
// (section 6.3), reduced to what locks need.

// seqKey names an object in Session.Seqs.
func seqKey(s *space, name string) string {
	if s.election {
		return "e/" + name
	}
	return "l/" + name
}

// repeated reports whether c's number is not above the last one applied for
// its session and object. Commands without a number are never repeats.
func (st *state) repeated(s *space, c Command) bool {
	if c.Seq == 0 {
		return false
	}
	seqs, _ := st.seqs.get(c.Session)
	return c.Seq <= seqs[seqKey(s, c.Name)]
}

// noteSeq records c's number as the last applied for its session and
// object. The caller has checked that the session exists.
func (st *state) noteSeq(s *space, c Command) {
	if c.Seq == 0 {
		return
	}
	seqs, ok := st.seqs.mut(c.Session)
	if !ok {
		seqs = make(map[string]uint64, 1)
		st.seqs.set(c.Session, seqs)
	}
	seqs[seqKey(s, c.Name)] = c.Seq
}

// once runs f for a command that changes a holding (release, proclaim,
// resign), unless the command repeats one already applied. A repeat changes
// nothing: it gets the answer the first one got when the state still shows
// its effect (still, if not nil, says so), and is refused with refusal
// otherwise.
func (st *state) once(s *space, c Command, refusal error, still func() bool, f func() Result) Result {
	if err := st.checkObject(c); err != nil {
		return Result{Err: err}
	}
	if st.repeated(s, c) {
		if still != nil && still() {
			return Result{}
		}
		return Result{Err: fmt.Errorf("%w: %s: request %d repeats one already applied", refusal, c.Name, c.Seq)}
	}
	st.noteSeq(s, c)
	return f()
}
