package validate

import (
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
	var last int64
	for _, op := range ops {
		last = max(last, op.Call)
		if op.Return != history.Infinity {
			last = max(last, op.Return)
		}
	}
	var pops []porcupine.Operation
	for _, op := range ops {
		if skip[op.Lock] {
			continue
		}
		if op.Status == history.Fail && (op.Kind == history.Read || op.Kind == history.Check) {
			continue // no effect, and nothing observed
		}
		ret := op.Return
		if ret == history.Infinity {
			ret = last + 1 // after everything: the outcome may land anywhere after the call
		}
		pops = append(pops, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: ret})
	}
	m := model.Lock.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, pops, timeout)
	switch res {
	case porcupine.Illegal:
		v.addf("a lock's history is not linearizable (see the visualization)")
		path := filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(m, info, path); err == nil {
			v.Artifact = path
		}
	case porcupine.Unknown:
		v.Undecided = "porcupine timed out after " + timeout.String()
	}
	v.Details = append(v.Details, "checked "+itoa(len(pops))+" operations")
	return v
}
