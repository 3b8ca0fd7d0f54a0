// Package model is the sequential specification of one lockd lock, for
// porcupine's linearizability checker. A history is partitioned by lock
// name, and each partition is checked against this model on its own.
//
// Lease expiry is modelled by recording it: the end of a session is an
// operation of the history (kind history.End). A destroyed session's End
// spans the destroy call; an expired session's End starts at the earliest
// moment the server may expire it (the send time of the last keepalive or
// create it acknowledged + TTL, not the client library's earlier, safer
// deadline) and never completes, so the checker may place the loss of the
// lock anywhere after that moment, but never before. A server that drops a
// holder earlier (for instance by expiring inherited sessions at once after
// a failover, or sessions at 0.9 x TTL) is not linearizable under this
// model.
package model

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

// State is the state of one lock: its holder (empty when free) and the
// token of the current or last grant. When Known is false, the lock was
// granted by an operation whose outcome the client never learned, and
// Token is only a lower bound.
type State struct {
	Holder string
	Token  uint64
	Known  bool
}

// Lock is the porcupine model of one exclusive lock, partitioned by name.
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
		if s.Holder == "" {
			return fmt.Sprintf("free (last token %d)", s.Token)
		}
		if !s.Known {
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
		return acquire(s, op)
	case history.Release:
		next := s
		if s.Holder == op.Session {
			next = State{Token: s.Token, Known: s.Known}
		}
		switch op.Status {
		case history.OK:
			// The client library reports "not the holder" as success.
			return []any{next}
		case history.Unknown:
			return []any{s, next}
		}
		return same
	case history.End:
		if s.Holder == op.Session {
			return []any{State{Token: s.Token, Known: s.Known}}
		}
		return same
	case history.Read:
		if op.Status != history.OK {
			return same
		}
		if op.Holder != s.Holder {
			return nil
		}
		if op.Holder == "" {
			return same
		}
		if s.Known {
			if op.Token != s.Token {
				return nil
			}
			return same
		}
		if op.Token <= s.Token {
			return nil
		}
		return []any{State{Holder: s.Holder, Token: op.Token, Known: true}}
	case history.Check:
		if op.Status != history.OK {
			return same
		}
		current := s.Holder != "" && s.Known && s.Token == op.Token
		if op.Valid == current || (s.Holder != "" && !s.Known) {
			return same
		}
		return nil
	}
	return same
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
		if s.Holder != "" || op.Token <= s.Token {
			return nil
		}
		return []any{State{Holder: op.Session, Token: op.Token, Known: true}}
	case history.Unknown:
		if s.Holder == "" {
			return []any{s, State{Holder: op.Session, Token: s.Token, Known: false}}
		}
		return []any{s}
	}
	switch op.Code {
	case "lock_held":
		if s.Holder == "" || s.Holder == op.Session {
			return nil
		}
	case "lock_delay":
		if s.Holder != "" {
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
