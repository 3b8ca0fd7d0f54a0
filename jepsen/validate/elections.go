package validate

import (
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/model"
)

// CheckElections checks the history of each election in names against
// model.Election (a lock whose leader has a value: campaigns, proclaims
// and leader reads), one partition per election, the way
// CheckLinearizable checks locks. On a violation it writes porcupine's
// visualization to dir/elections.html.
func CheckElections(ops []history.Op, names map[string]bool, timeout time.Duration, dir string) Verdict {
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
		if !names[op.Lock] || (op.Status == history.Fail && op.Kind == history.Read) {
			continue
		}
		ret := op.Return
		if ret == history.Infinity {
			ret = last + 1
		}
		pops = append(pops, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: ret})
	}
	m := model.Election.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, pops, timeout)
	switch res {
	case porcupine.Illegal:
		broken := whereBroken(pops, info)
		if len(broken) == 0 {
			v.addf("an election's history is not linearizable (see the visualization)")
		}
		for _, b := range broken {
			v.addf("%s", b)
		}
		path := filepath.Join(dir, "elections.html")
		if err := porcupine.VisualizePath(m, info, path); err == nil {
			v.Artifact = path
		}
	case porcupine.Unknown:
		v.Undecided = "porcupine timed out on the elections after " + timeout.String()
	}
	v.Details = append(v.Details, "checked "+itoa(len(pops))+" election operations with their values")
	return v
}

// MergeVerdicts joins verdicts of one checker given in parts (the locks'
// and the elections' linearizability) into one: violations add up, the
// first undecided reason and artifact stand.
func MergeVerdicts(parts ...Verdict) Verdict {
	var v Verdict
	for i, p := range parts {
		if i == 0 {
			v.Checker = p.Checker
		}
		v.Violations += p.Violations
		if v.Undecided == "" {
			v.Undecided = p.Undecided
		}
		if v.Artifact == "" {
			v.Artifact = p.Artifact
		}
		v.Details = append(v.Details, p.Details...)
	}
	return v
}
