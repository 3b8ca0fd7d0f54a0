package model

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

// Register is one key of a group as the model knows it: whether it
// exists, its value, and its modify index (0 while unknown: written by a
// put whose answer was lost, until a read shows it).
type Register struct {
	Exists bool
	Value  string
	Mod    uint64
}

// KVState is a group's registers.
type KVState [history.KVRegisters]Register

// KV is the porcupine model of the namespace workload's registers,
// partitioned by group: gets, puts, compare-and-swaps on the modify
// index, deletes, transactions that compare register 0's value and then
// write both registers or read both, and repeats of earlier puts, which
// must change nothing. Every value written is unique, so a value names
// the write that made it, and a read of it learns that write's modify
// index when the write's own answer was lost.
//
// An operation of unknown outcome may or may not have taken effect; a
// refused one (Fail) took none. A cas refused as cas_failed says its
// compare did not hold.
var KV = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byGroup := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range h {
			g := op.Input.(history.KVOp).Group
			if _, ok := byGroup[g]; !ok {
				names = append(names, g)
			}
			byGroup[g] = append(byGroup[g], op)
		}
		out := make([][]porcupine.Operation, 0, len(names))
		for _, n := range names {
			out = append(out, byGroup[n])
		}
		return out
	},
	Init: func() []any { return []any{KVState{}} },
	Step: func(state, input, _ any) []any {
		return KVStep(state.(KVState), input.(history.KVOp))
	},
	Equal:             func(a, b any) bool { return a.(KVState) == b.(KVState) },
	DescribeOperation: func(input, _ any) string { return DescribeKV(input.(history.KVOp)) },
	DescribeState: func(state any) string {
		s := state.(KVState)
		parts := make([]string, len(s))
		for i, r := range s {
			switch {
			case !r.Exists:
				parts[i] = fmt.Sprintf("%d: absent", i)
			case r.Mod == 0:
				parts[i] = fmt.Sprintf("%d: %q (index unknown)", i, r.Value)
			default:
				parts[i] = fmt.Sprintf("%d: %q @%d", i, r.Value, r.Mod)
			}
		}
		return strings.Join(parts, ", ")
	},
}

// KVStep returns every state a group may be in after op, or none if op
// could not have happened in state s.
func KVStep(s KVState, op history.KVOp) []any {
	if op.Key < 0 || op.Key >= len(s) {
		return nil
	}
	r := s[op.Key]
	written := s
	written[op.Key] = Register{Exists: true, Value: op.Value, Mod: op.Index}
	switch op.Kind {
	case history.KVGet:
		if op.Status != history.OK || len(op.Seen) != 1 {
			return []any{s} // nothing observed
		}
		if next, ok := observe(s, op.Key, op.Seen[0]); ok {
			return []any{next}
		}
		return nil
	case history.KVPut:
		return outcome(op.Status, s, written)
	case history.KVDelete:
		gone := s
		gone[op.Key] = Register{}
		if op.Status == history.OK && op.Deleted != boolInt(r.Exists) {
			return nil
		}
		return outcome(op.Status, s, gone)
	case history.KVCAS:
		var mayHold, mayFail bool
		switch {
		case op.CAS == 0:
			mayHold, mayFail = !r.Exists, r.Exists
		case !r.Exists:
			mayFail = true
		case r.Mod == 0: // its index unknown: either
			mayHold, mayFail = true, true
		default:
			mayHold, mayFail = r.Mod == op.CAS, r.Mod != op.CAS
		}
		switch op.Status {
		case history.OK:
			if mayHold {
				return []any{written}
			}
			return nil
		case history.Fail:
			if op.Code == "cas_failed" && !mayFail {
				return nil
			}
			return []any{s}
		}
		var out []any
		if mayFail {
			out = append(out, s)
		}
		if mayHold {
			out = append(out, written)
		}
		return out
	case history.KVTxn:
		holds := s[0].Exists && s[0].Value == op.Expect
		both := KVState{{Exists: true, Value: op.Value, Mod: op.Index}, {Exists: true, Value: op.Value2, Mod: op.Index}}
		switch op.Status {
		case history.OK:
			if op.Succeeded != holds {
				return nil
			}
			if holds {
				return []any{both}
			}
			next := s
			for i, seen := range op.Seen {
				var ok bool
				if next, ok = observe(next, i, seen); !ok {
					return nil
				}
			}
			return []any{next}
		case history.Fail:
			return []any{s}
		}
		if holds {
			return []any{s, both}
		}
		return []any{s}
	case history.KVRepeat:
		return []any{s} // a repeat changes nothing, whatever it answered
	}
	return nil
}

// observe checks a read of register i against s, and learns the index of
// a value whose write's answer was lost.
func observe(s KVState, i int, seen history.KVSeen) (KVState, bool) {
	if i >= len(s) {
		return s, false
	}
	r := s[i]
	switch {
	case seen.Exists != r.Exists:
		return s, false
	case !r.Exists:
		return s, true
	case seen.Value != r.Value:
		return s, false
	case r.Mod == 0:
		s[i].Mod = seen.ModifyIndex
		return s, true
	}
	return s, seen.ModifyIndex == r.Mod
}

// outcome is the states after a write that leads from s to next, by its
// status: next if it took effect, s if refused, either if unknown.
func outcome(st history.Status, s, next KVState) []any {
	switch st {
	case history.OK:
		return []any{next}
	case history.Fail:
		return []any{s}
	}
	return []any{s, next}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// DescribeKV renders a namespace operation for the visualization and
// reports.
func DescribeKV(op history.KVOp) string {
	res := string(op.Status)
	if op.Code != "" {
		res = op.Code
	}
	if op.Status == history.OK && op.Index != 0 {
		res = fmt.Sprintf("ok @%d", op.Index)
	}
	seen := func() string {
		var parts []string
		for _, s := range op.Seen {
			if !s.Exists {
				parts = append(parts, "absent")
				continue
			}
			parts = append(parts, fmt.Sprintf("%q @%d", s.Value, s.ModifyIndex))
		}
		return strings.Join(parts, ", ")
	}
	switch op.Kind {
	case history.KVGet:
		if op.Status == history.OK {
			return fmt.Sprintf("get(%d) -> %s", op.Key, seen())
		}
		return fmt.Sprintf("get(%d) -> %s", op.Key, res)
	case history.KVPut, history.KVRepeat:
		return fmt.Sprintf("%s(%d, %q) -> %s", op.Kind, op.Key, op.Value, res)
	case history.KVCAS:
		return fmt.Sprintf("cas(%d, @%d, %q) -> %s", op.Key, op.CAS, op.Value, res)
	case history.KVDelete:
		return fmt.Sprintf("delete(%d) -> %s, %d deleted", op.Key, res, op.Deleted)
	case history.KVTxn:
		branch := ""
		if op.Status == history.OK {
			branch = " then"
			if !op.Succeeded {
				branch = " else read " + seen()
			}
		}
		return fmt.Sprintf("txn(0 = %q ? put %q, %q) -> %s%s", op.Expect, op.Value, op.Value2, res, branch)
	}
	return fmt.Sprintf("%s -> %s", op.Kind, res)
}
