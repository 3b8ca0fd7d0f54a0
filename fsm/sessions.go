package fsm

import (
	"fmt"
	"slices"
	"time"
)

// createSession runs OpCreateSession.
func (st *state) createSession(o op, c Command) Result {
	switch {
	case c.Session == "":
		return refuse("%v: empty session id", c.Op)
	case c.TTL <= 0:
		return refuse("%v: ttl %v is not positive", c.Op, c.TTL)
	case c.LockDelay < 0:
		return refuse("%v: negative lock-delay %v", c.Op, c.LockDelay)
	case c.SeqWindow < 0 || c.SeqWindow > MaxSeqWindow:
		return refuse("%v: request-number window %d (want 0 to %d)", c.Op, c.SeqWindow, MaxSeqWindow)
	}
	if st.sessions.has(c.Session) {
		return Result{Err: fmt.Errorf("%w: %q", ErrSessionExists, c.Session)}
	}
	s := Session{ID: c.Session, Name: c.Name, TTL: c.TTL, LockDelay: c.LockDelay, CreateIndex: o.index, SeqWindow: c.SeqWindow, Owner: c.Owner}
	st.sessions.set(s.ID, s)
	st.tokens.own(s.Owner, 1)
	return Result{Session: &s}
}

// endSession runs OpDestroySession and, with expire set, OpExpireSession:
// the session loses everything at once, its ephemeral keys included; on
// expiry what it held stays ungrantable for its lock-delay.
func (st *state) endSession(o op, id string, expire bool) Result {
	sess, ok := st.sessions.get(id)
	if !ok {
		return Result{Err: sessionNotFound(id)}
	}
	var delay time.Duration
	if expire {
		delay = sess.LockDelay
	}
	res := Result{
		Released: st.locks.evict(id, delay, expire, o),
		Resigned: st.elections.evict(id, delay, expire, o),
	}
	st.kv.endSession(o, id)
	st.sessions.del(id)
	st.tokens.own(sess.Owner, -1)
	st.seqs.del(id)
	return res
}

// expireSessions runs OpExpireSessions: each named session that still
// exists expires as under OpExpireSession, in the order given. An id that
// names no session (one ended since the leader listed it, or a repeat in
// the list) is skipped, so that the others still expire.
func (st *state) expireSessions(o op, c Command) Result {
	if len(c.Sessions) == 0 || len(c.Sessions) > MaxSessionsPerEntry {
		return refuse("%v: %d sessions (want 1 to %d)", c.Op, len(c.Sessions), MaxSessionsPerEntry)
	}
	if slices.Contains(c.Sessions, "") {
		return refuse("%v: empty session id", c.Op)
	}
	var res Result
	for _, id := range c.Sessions {
		if !st.sessions.has(id) {
			continue
		}
		r := st.endSession(o, id, true)
		res.Expired = append(res.Expired, Expiry{Session: id, Released: r.Released, Resigned: r.Resigned})
	}
	return res
}

// setMember runs OpSetMember.
func (st *state) setMember(c Command) Result {
	if c.Member == nil || c.Member.ID == "" {
		return refuse("%v: no member id", c.Op)
	}
	st.members[c.Member.ID] = *c.Member
	return Result{}
}

// removeMember runs OpRemoveMember. Removing a missing member is not an
// error, so a retried removal succeeds.
func (st *state) removeMember(c Command) Result {
	if c.Member == nil || c.Member.ID == "" {
		return refuse("%v: no member id", c.Op)
	}
	delete(st.members, c.Member.ID)
	return Result{}
}
