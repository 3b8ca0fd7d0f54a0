// Package model is the sequential specification of one lockd lock, for
// porcupine's linearizability checker. A history is partitioned by lock
// name, and each partition is checked against this model on its own.
//
// A lock is free, held by one exclusive holder, or held by any number of
// shared holders. Every grant's token is the Raft index of the entry that
// granted it, so tokens only grow; shared holders that one hand-off
// granted together share their entry's token.
//
// Lease expiry is modelled by recording it: the end of a session is an
// operation of the history (kind history.End). A destroyed session's End
// spans the destroy call; an expired session's End starts at the earliest
// moment the server may expire it (the send time of the last keepalive or
// create it acknowledged + TTL, less the clock-drift bound, since the
// leader measures the TTL on its own clock; not the client library's
// earlier, safer deadline) and never completes, so the checker may place the loss of the
// lock anywhere after that moment, but never before. A server that drops a
// holder earlier (for instance by expiring inherited sessions at once after
// a failover, or sessions at 0.9 x TTL) is not linearizable under this
// model.
package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

// State is the state of one lock: its exclusive holder (empty when none),
// its shared holders, and the highest token granted so far. When Known is
// false, the exclusive holder was granted by an operation whose outcome the
// client never learned, and its token is only known to be above Token.
//
// Shared lists the shared holders as a sorted, comma-separated list of
// "session=token", or "session>bound" for a grant of unknown outcome whose
// token is only known to be above bound. (A string keeps State comparable
// with ==, as porcupine needs.)
type State struct {
	Holder string
	Token  uint64
	Known  bool
	Shared string
}

// sharedHolder is one entry of State.Shared.
type sharedHolder struct {
	session string
	token   uint64 // the token, or the bound when !known
	known   bool
}

func (s State) shared() []sharedHolder {
	if s.Shared == "" {
		return nil
	}
	var out []sharedHolder
	for _, e := range strings.Split(s.Shared, ",") {
		if i := strings.IndexAny(e, "=>"); i > 0 {
			tok, _ := strconv.ParseUint(e[i+1:], 10, 64)
			out = append(out, sharedHolder{session: e[:i], token: tok, known: e[i] == '='})
		}
	}
	return out
}

func (s State) withShared(hs []sharedHolder) State {
	parts := make([]string, 0, len(hs))
	for _, h := range hs {
		sep := ">"
		if h.known {
			sep = "="
		}
		parts = append(parts, h.session+sep+strconv.FormatUint(h.token, 10))
	}
	sort.Strings(parts)
	s.Shared = strings.Join(parts, ",")
	return s
}

// sharedIndex returns the index of session among hs, or -1.
func sharedIndex(hs []sharedHolder, session string) int {
	for i, h := range hs {
		if h.session == session {
			return i
		}
	}
	return -1
}

// free reports whether nobody holds the lock.
func (s State) free() bool { return s.Holder == "" && s.Shared == "" }

// holdsIn reports whether session holds the lock in mode ("" or
// "exclusive", or "shared").
func (s State) holdsIn(session, mode string) bool {
	if mode == "shared" {
		return sharedIndex(s.shared(), session) >= 0
	}
	return s.Holder == session
}

// without returns s with session's holding, if any, dropped.
func (s State) without(session string) State {
	if s.Holder == session {
		return State{Token: s.Token, Known: s.Known}
	}
	hs := s.shared()
	if i := sharedIndex(hs, session); i >= 0 {
		return s.withShared(append(hs[:i:i], hs[i+1:]...))
	}
	return s
}

// Lock is the porcupine model of one lock, partitioned by name.
var Lock = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byLock := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range h {
			n := op.Input.(history.Op).Lock
			if _, ok := byLock[n]; !ok {
				names = append(names, n)
			}
			byLock[n] = append(byLock[n], op)
		}
		var out [][]porcupine.Operation
		for _, n := range names {
			out = append(out, byLock[n])
		}
		return out
	},
	Init: func() []any { return []any{State{Known: true}} },
	Step: func(state, input, _ any) []any {
		return Step(state.(State), input.(history.Op))
	},
	DescribeOperation: func(input, _ any) string { return Describe(input.(history.Op)) },
	DescribeState: func(state any) string {
		s := state.(State)
		switch {
		case s.Shared != "":
			return fmt.Sprintf("shared by %s (last token %d)", s.Shared, s.Token)
		case s.Holder == "":
			return fmt.Sprintf("free (last token %d)", s.Token)
		case !s.Known:
			return fmt.Sprintf("held by %s, token > %d", short(s.Holder), s.Token)
		}
		return fmt.Sprintf("held by %s, token %d", short(s.Holder), s.Token)
	},
}

// Step returns every state the lock may be in after op, or none if op
// could not have happened in state s.
func Step(s State, op history.Op) []any {
	same := []any{s}
	switch op.Kind {
	case history.Acquire:
		if op.Mode == "shared" {
			return acquireShared(s, op)
		}
		return acquire(s, op)
	case history.Release:
		next := s.without(op.Session)
		switch op.Status {
		case history.OK:
			// The client library reports "not the holder" as success.
			return []any{next}
		case history.Unknown:
			return []any{s, next}
		}
		return same
	case history.End:
		return []any{s.without(op.Session)}
	case history.Read:
		if op.Status != history.OK {
			return same
		}
		return read(s, op)
	case history.Check:
		if op.Status != history.OK {
			return same
		}
		current, unsure := s.current(op.Token)
		if op.Valid == current || unsure {
			return same
		}
		return nil
	}
	return same
}

// current reports whether token is a current holder's, and whether that
// is unsure because a holder's token is not known.
func (s State) current(token uint64) (current, unsure bool) {
	if s.Holder != "" {
		return s.Known && s.Token == token, !s.Known
	}
	for _, h := range s.shared() {
		current = current || h.known && h.token == token
		unsure = unsure || !h.known
	}
	return current, unsure
}

// read checks a read that saw op.Holder (the first holder; "" when free)
// with op.Token.
func read(s State, op history.Op) []any {
	if s.Shared != "" {
		hs := s.shared()
		i := sharedIndex(hs, op.Holder)
		switch {
		case i < 0:
			return nil
		case hs[i].known && hs[i].token != op.Token, !hs[i].known && op.Token <= hs[i].token:
			return nil
		}
		hs[i] = sharedHolder{session: op.Holder, token: op.Token, known: true}
		return []any{s.withShared(hs)}
	}
	if op.Holder != s.Holder {
		return nil
	}
	if op.Holder == "" {
		return []any{s}
	}
	if s.Known {
		if op.Token != s.Token {
			return nil
		}
		return []any{s}
	}
	if op.Token <= s.Token {
		return nil
	}
	return []any{State{Holder: s.Holder, Token: op.Token, Known: true}}
}

func acquire(s State, op history.Op) []any {
	switch op.Status {
	case history.OK:
		if s.Holder == op.Session {
			// Held already: the same grant. If the grant's outcome was
			// unknown, its token is still higher than every earlier
			// grant's, which s.Token bounds.
			if (s.Known && op.Token != s.Token) || (!s.Known && op.Token <= s.Token) {
				return nil
			}
			return []any{State{Holder: op.Session, Token: op.Token, Known: true}}
		}
		if !s.free() || op.Token <= s.Token {
			return nil
		}
		return []any{State{Holder: op.Session, Token: op.Token, Known: true}}
	case history.Unknown:
		if s.free() {
			return []any{s, State{Holder: op.Session, Token: s.Token, Known: false}}
		}
		return []any{s}
	}
	return refusal(s, op)
}

// acquireShared steps a shared acquire: shared holders coexist, and each
// grant's token is above every earlier grant's, or equal to that of the
// shared holders granted in the same entry.
func acquireShared(s State, op history.Op) []any {
	if s.Holder != "" {
		if op.Status == history.OK {
			return nil
		}
		if op.Status == history.Unknown {
			return []any{s}
		}
		return refusal(s, op)
	}
	hs := s.shared()
	i := sharedIndex(hs, op.Session)
	switch op.Status {
	case history.OK:
		if i >= 0 { // held already: the same grant
			h := hs[i]
			if (h.known && op.Token != h.token) || (!h.known && op.Token <= h.token) {
				return nil
			}
			hs[i] = sharedHolder{session: op.Session, token: op.Token, known: true}
			next := s.withShared(hs)
			next.Token = max(next.Token, op.Token)
			return []any{next}
		}
		together := false
		for _, h := range hs {
			together = together || h.known && h.token == op.Token && op.Token == s.Token
		}
		if op.Token <= s.Token && !together {
			return nil
		}
		next := s.withShared(append(hs, sharedHolder{session: op.Session, token: op.Token, known: true}))
		next.Token = op.Token
		return []any{next}
	case history.Unknown:
		if i >= 0 {
			return []any{s}
		}
		next := s.withShared(append(hs, sharedHolder{session: op.Session, token: s.Token}))
		return []any{s, next}
	}
	return refusal(s, op)
}

// refusal steps a refused acquire: "lock_held" needs a holder other than
// the session (for a shared request, an exclusive one, or a queue the
// model does not see, so any holder), or the session itself holding the
// lock in the other mode (lockd answers lock_held then too: "release it
// first"); "lock_delay" a free lock. A session that holds the lock in the
// mode it asks for is granted it again, never refused.
func refusal(s State, op history.Op) []any {
	switch op.Code {
	case "lock_held":
		if s.free() || s.holdsIn(op.Session, op.Mode) {
			return nil
		}
	case "lock_delay":
		if !s.free() {
			return nil
		}
	}
	return []any{s}
}

// Describe renders an operation for the visualization and reports.
func Describe(op history.Op) string {
	res := string(op.Status)
	if op.Code != "" {
		res = op.Code
	}
	switch op.Kind {
	case history.Acquire:
		if op.Status == history.OK {
			res = fmt.Sprintf("token %d", op.Token)
		}
		return fmt.Sprintf("acquire(%s) -> %s", short(op.Session), res)
	case history.Read:
		if op.Status == history.OK {
			if op.Holder == "" {
				res = "free"
			} else {
				res = fmt.Sprintf("%s/%d", short(op.Holder), op.Token)
			}
		}
		return fmt.Sprintf("read@%s -> %s", op.Node, res)
	case history.Check:
		if op.Status == history.OK {
			res = fmt.Sprint(op.Valid)
		}
		return fmt.Sprintf("check(%d) -> %s", op.Token, res)
	}
	return fmt.Sprintf("%s(%s) -> %s", op.Kind, short(op.Session), res)
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
