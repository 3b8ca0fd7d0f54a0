package validate

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/model"
)

// CheckLinearizable checks each lock's history against model.Lock. Locks
// in skip are left out (their histories are incomplete: the fenced lock is
// also taken by child processes the history does not see). On a violation
// it writes porcupine's visualization to dir/linearizability.html.
func CheckLinearizable(ops []history.Op, skip map[string]bool, timeout time.Duration, dir string) Verdict {
	v := Verdict{Checker: Linearizability}
	mayHold := sessionsThatMayHold(ops)
	pops := toPorcupine(ops, func(op history.Op) bool {
		switch {
		case skip[op.Lock]:
			return false
		case op.Kind == history.End && !mayHold[grantKey{op.Lock, op.Session}]:
			return false // changes nothing in any state the lock can be in
		case op.Status == history.Fail && (op.Kind == history.Read || op.Kind == history.Check):
			return false // no effect, and nothing observed
		}
		return true
	})
	runPorcupine(&v, model.Lock.ToModel(), pops, timeout, filepath.Join(dir, "linearizability.html"),
		"a lock's history is not linearizable (see the visualization)", "porcupine timed out after "+timeout.String())
	v.Cover(len(pops), "operations", "%d operations of locks", len(pops))
	v.undecidedIfNone("no operation of a lock to check")
	return v
}

// toPorcupine turns the operations keep accepts into porcupine's. One of
// unknown outcome returns after everything in ops: it may land anywhere
// after its call.
func toPorcupine(ops []history.Op, keep func(history.Op) bool) []porcupine.Operation {
	var last int64
	for _, op := range ops {
		last = max(last, op.Call)
		if op.Return != history.Infinity {
			last = max(last, op.Return)
		}
	}
	var pops []porcupine.Operation
	for _, op := range ops {
		if !keep(op) {
			continue
		}
		ret := op.Return
		if ret == history.Infinity {
			ret = last + 1
		}
		pops = append(pops, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: ret})
	}
	return pops
}

// runPorcupine checks pops against m within timeout and records the
// outcome on v: each broken partition (or broken when none can be named)
// as a violation with porcupine's visualization written to path, or
// undecided when porcupine ran out of time.
func runPorcupine(v *Verdict, m porcupine.Model, pops []porcupine.Operation, timeout time.Duration, path, broken, undecided string) {
	res, info := porcupine.CheckOperationsVerbose(m, pops, timeout)
	switch res {
	case porcupine.Illegal:
		where := whereBroken(pops, info)
		if len(where) == 0 {
			v.addf("%s", broken)
		}
		for _, b := range where {
			v.addf("%s", b)
		}
		if err := porcupine.VisualizePath(m, info, path); err == nil {
			v.Artifact = path
		}
	case porcupine.Unknown:
		v.Undecided = undecided
	}
}

// whereBroken says, for each lock whose history porcupine could not
// linearize, how far the longest linearizable prefix it found goes and
// which operation, earliest by invocation, it could not place: where to
// start reading the visualization.
func whereBroken(pops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	total := map[string]int{}
	for _, p := range pops {
		total[p.Input.(history.Op).Lock]++
	}
	var out []string
	for _, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		var lock string
		for _, pl := range partials {
			if len(pl) > len(longest) {
				longest = pl
			}
			if len(pl) > 0 {
				lock = pl[0].Input.(history.Op).Lock
			}
		}
		if lock == "" || len(longest) >= total[lock] {
			continue
		}
		placed := map[int64]bool{}
		for _, p := range longest {
			placed[p.Input.(history.Op).ID] = true
		}
		var first *porcupine.Operation
		for i := range pops {
			p := &pops[i]
			if op := p.Input.(history.Op); op.Lock == lock && !placed[op.ID] && (first == nil || p.Call < first.Call) {
				first = p
			}
		}
		msg := fmt.Sprintf("%s is not linearizable: the longest linearizable prefix has %d of its %d operations",
			lock, len(longest), total[lock])
		if first != nil {
			msg += fmt.Sprintf("; the earliest operation left out is %s, invoked at %.3fs",
				model.Describe(first.Input.(history.Op)), float64(first.Call)/1e9)
		}
		out = append(out, msg)
	}
	return out
}

// sessionsThatMayHold returns the (lock, session) pairs for which the
// history has an acquire that was granted or may have been (its outcome
// unknown): only such a session can hold the lock, or wait for it, in any
// state the model reaches. The End of any other session changes nothing,
// so leaving it out keeps every verdict; it matters because an expired
// session's End never completes, and dozens of such operations, pending
// all at once, can make the search time out (a lock-delay lock of
// abandoned sessions did: most of them were refused the lock).
func sessionsThatMayHold(ops []history.Op) map[grantKey]bool {
	out := map[grantKey]bool{}
	for _, op := range ops {
		if op.Kind == history.Acquire && op.Status != history.Fail {
			out[grantKey{op.Lock, op.Session}] = true
		}
	}
	return out
}
