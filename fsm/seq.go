package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

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
//
// Transactions of the namespace of keys carry numbers too: their object
// is the first key they name (txnObject), which a session never holds or
// queues for, so a bounded table files it with the objects let go of.
//
// # Bounded tables
//
// A session created with a window W (Command.SeqWindow; this build's
// leaders give every session DefaultSeqWindow) keeps the number of an
// object only while it holds the object or queues for it, and for the W
// objects it let go of with the highest numbers. When one more is let go
// of, the lowest of them is dropped and its number folded into the
// session's floor (the highest number dropped). A numbered command on an
// object the table has no number for is a repeat when its number is not
// above the floor. So the table holds what the session holds and queues
// for, plus W, and still:
//
//   - a retry of an applied command is never applied again: its object
//     either still has a number, at least the retry's (numbers of an object
//     only grow while it has one, and an object that gets a number again
//     gets one above the floor, which is at least any number it had), or
//     has none and the floor is at least the number it had;
//   - an abandoned command arriving late is refused just as before, by
//     the same two rules.
//
// The price: a command that was never applied, whose number is at or below
// the floor and whose object has no number, is taken for a repeat. That
// happens only to a command that reaches the leader after its session has
// let go of W other objects under higher numbers: a client that runs
// operations of one session concurrently, on many objects, and one of
// them is late by W whole operations.
//
// A session created with window 0 (every session of an older build's
// entries) keeps every number until it ends, as older builds did, so that
// a log replays to the state the build that wrote it reached.

// DefaultSeqWindow is the window the leader gives every session it creates.
const DefaultSeqWindow = 16

// MaxSeqWindow bounds Command.SeqWindow.
const MaxSeqWindow = 1024

// seqTable is one session's request numbers.
type seqTable struct {
	floor uint64            // the highest number dropped (bounded tables only)
	last  map[string]uint64 // object (seqKey) -> the highest number applied
	// idle names the objects in last the session neither holds nor queues
	// for; bounded tables keep at most their window of them.
	idle map[string]struct{}
}

func cloneSeqTable(t *seqTable) *seqTable {
	return &seqTable{floor: t.floor, last: maps.Clone(t.last), idle: maps.Clone(t.idle)}
}

// seqKey names an object in a seqTable.
func seqKey(s *space, name string) string {
	if s.election {
		return "e/" + name
	}
	return "l/" + name
}

// repeated reports whether c's number is not above the last one applied for
// its session and object, or, for an object without a number, not above
// the session's floor. Commands without a number are never repeats.
func (st *state) repeated(s *space, c Command) bool {
	return st.seen(c.Session, seqKey(s, c.Name), c.Seq)
}

// seen reports whether seq is not above the number session's table keeps
// for key, or, without one, not above its floor; 0 is never seen.
func (st *state) seen(session, key string, seq uint64) bool {
	if seq == 0 {
		return false
	}
	t, ok := st.seqs.get(session)
	if !ok {
		return false
	}
	if n, ok := t.last[key]; ok {
		return seq <= n
	}
	return seq <= t.floor
}

// noteSeq records c's number as the last applied for its session and
// object. The caller has checked that the session exists.
func (st *state) noteSeq(s *space, c Command) {
	if c.Seq == 0 {
		return
	}
	st.seqTable(c.Session).last[seqKey(s, c.Name)] = c.Seq
	st.noted = append(st.noted, StandingTopic(s.election, c.Name, c.Session))
}

// noteIdleSeq records seq as the last number applied for session's
// object key, one the session never holds or queues for (a transaction's,
// kvtxn.go): a bounded table files it as idle at once, and trims.
func (st *state) noteIdleSeq(session, key string, seq uint64) {
	t := st.seqTable(session)
	t.last[key] = seq
	if sess, _ := st.sessions.get(session); sess.SeqWindow > 0 {
		if t.idle == nil {
			t.idle = make(map[string]struct{})
		}
		t.idle[key] = struct{}{}
		t.trim(sess.SeqWindow)
	}
}

// seqTable returns session's table to change, made first if it has none.
func (st *state) seqTable(session string) *seqTable {
	t, ok := st.seqs.mut(session)
	if !ok {
		t = &seqTable{last: make(map[string]uint64, 1)}
		st.seqs.set(session, t)
	}
	return t
}

// boundSeqs runs after every entry: for each object whose number the entry
// recorded, and each whose holder or queue changed, it looks whether the
// session still holds or queues for it, and drops the numbers a bounded
// table no longer needs.
func (st *state) boundSeqs() {
	for _, ts := range [][]Topic{st.noted, st.touched} {
		for _, t := range ts {
			if t.kind == topicStanding {
				st.classify(t.session, t.election, t.name)
			}
		}
	}
	clear(st.noted)
	st.noted = st.noted[:0]
}

// classify files the number of session's object as idle or in use, and
// trims the idle ones to the session's window.
func (st *state) classify(session string, election bool, name string) {
	t, ok := st.seqs.get(session)
	sess, _ := st.sessions.get(session)
	if !ok || sess.SeqWindow == 0 {
		return
	}
	s := st.space(election)
	key := seqKey(s, name)
	if _, ok := t.last[key]; !ok {
		return
	}
	idle := !has(s.held, session, name) && !has(s.waiting, session, name)
	if _, was := t.idle[key]; was == idle {
		return
	}
	t, _ = st.seqs.mut(session)
	if !idle {
		delete(t.idle, key)
		return
	}
	if t.idle == nil {
		t.idle = make(map[string]struct{})
	}
	t.idle[key] = struct{}{}
	t.trim(sess.SeqWindow)
}

// trim drops the idle numbers beyond the window, lowest first (names break
// ties, so every replica drops the same), into the floor.
func (t *seqTable) trim(window int) {
	if len(t.idle) <= window {
		return
	}
	keys := slices.SortedFunc(maps.Keys(t.idle), func(a, b string) int {
		return cmp.Or(cmp.Compare(t.last[a], t.last[b]), strings.Compare(a, b))
	})
	for _, k := range keys[:len(keys)-window] {
		t.floor = max(t.floor, t.last[k])
		delete(t.last, k)
		delete(t.idle, k)
	}
}

// idleKeys returns the objects of t the session neither holds nor queues
// for, as the reverse indexes of st say.
func (st *state) idleKeys(session string, t *seqTable) map[string]struct{} {
	out := make(map[string]struct{})
	for key := range t.last {
		if strings.HasPrefix(key, kvSeqPrefix) {
			out[key] = struct{}{} // a transaction's: never held
			continue
		}
		s, name := st.locks, strings.TrimPrefix(key, "l/")
		if strings.HasPrefix(key, "e/") {
			s, name = st.elections, strings.TrimPrefix(key, "e/")
		}
		if !has(s.held, session, name) && !has(s.waiting, session, name) {
			out[key] = struct{}{}
		}
	}
	return out
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
