package model

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

// ElectionState is the state of one election: the lock it is (its leader
// is the holder) and the leader's value, "" when nobody leads.
type ElectionState struct {
	Lock  State
	Value string
}

// Election is the porcupine model of one election, partitioned by name:
// an exclusive lock (campaign = acquire, resign = release, leader = read,
// as in Lock) whose leader has a value. A campaign that makes its session
// leader sets the value it asked for; a campaign by the leader itself
// changes nothing; a proclaim, only possible for the leader, sets a new
// one; a read that sees a leader must see its value.
var Election = porcupine.NondeterministicModel{
	Partition: Lock.Partition,
	Init:      func() []any { return []any{ElectionState{Lock: State{Known: true}}} },
	Step: func(state, input, _ any) []any {
		return ElectionStep(state.(ElectionState), input.(history.Op))
	},
	DescribeOperation: func(input, _ any) string { return DescribeElection(input.(history.Op)) },
	DescribeState: func(state any) string {
		s := state.(ElectionState)
		if s.Lock.Holder == "" {
			return fmt.Sprintf("no leader (last token %d)", s.Lock.Token)
		}
		return fmt.Sprintf("%s, value %q", Lock.DescribeState(s.Lock), s.Value)
	},
}

// ElectionStep returns every state the election may be in after op, or
// none if op could not have happened in state s.
func ElectionStep(s ElectionState, op history.Op) []any {
	switch op.Kind {
	case history.Proclaim:
		next := ElectionState{Lock: s.Lock, Value: op.Value}
		switch {
		case op.Status == history.Fail:
			return []any{s}
		case s.Lock.Holder != op.Session:
			if op.Status == history.OK {
				return nil // only the leader's proclaim succeeds
			}
			return []any{s}
		case op.Status == history.OK:
			return []any{next}
		}
		return []any{s, next}
	case history.Read:
		if op.Status == history.OK && op.Holder != "" && op.Holder == s.Lock.Holder && op.Value != s.Value {
			return nil
		}
	}
	var out []any
	for _, x := range Step(s.Lock, op) {
		l := x.(State)
		next := ElectionState{Lock: l, Value: s.Value}
		switch {
		case l.Holder == "":
			next.Value = ""
		case l.Holder != s.Lock.Holder:
			next.Value = op.Value // a campaign made its session leader
		}
		out = append(out, next)
	}
	return out
}

// DescribeElection renders an election operation for the visualization
// and reports.
func DescribeElection(op history.Op) string {
	switch op.Kind {
	case history.Proclaim:
		res := string(op.Status)
		if op.Code != "" {
			res = op.Code
		}
		return fmt.Sprintf("proclaim(%s, %q) -> %s", short(op.Session), op.Value, res)
	case history.Acquire:
		return fmt.Sprintf("campaign(%q) %s", op.Value, Describe(op))
	case history.Read:
		if op.Status == history.OK && op.Holder != "" {
			return fmt.Sprintf("%s %q", Describe(op), op.Value)
		}
	}
	return Describe(op)
}
