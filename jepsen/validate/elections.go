package validate

import (
	"path/filepath"
	"time"

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
	pops := toPorcupine(ops, func(op history.Op) bool {
		return names[op.Lock] && !(op.Status == history.Fail && op.Kind == history.Read)
	})
	runPorcupine(&v, model.Election.ToModel(), pops, timeout, filepath.Join(dir, "elections.html"),
		"an election's history is not linearizable (see the visualization)",
		"porcupine timed out on the elections after "+timeout.String())
	v.Cover(len(pops), "operations", "%d election operations with their values", len(pops))
	return v
}

// MergeVerdicts joins verdicts of one checker given in parts (the locks'
// and the elections' linearizability) into one: violations and what was
// checked add up (in the first part's unit), the first undecided reason
// and artifact stand.
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
		v.Checked += p.Checked
		if v.Unit == "" {
			v.Unit = p.Unit
		}
		if p.Coverage != "" {
			if v.Coverage != "" {
				v.Coverage += "; "
			}
			v.Coverage += p.Coverage
		}
	}
	return v
}
