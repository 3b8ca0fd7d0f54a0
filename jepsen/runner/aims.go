package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/validate"
)

// FaultAims is the name of the verdict on the aimed faults' cycles.
const FaultAims = "fault-aims"

// CheckAims is the verdict on a run's aimed faults (failpoint.Aimed): a
// fault that was injected but reached the situation it aims for in none
// of its cycles showed nothing of what it is for, so the run is undecided
// for it ("NOT REACHED"), not passed. Its details say "reached N of M
// cycles" per fault.
func CheckAims(aims map[string]failpoint.Aim) validate.Verdict {
	v := validate.Verdict{Checker: FaultAims}
	var missed []string
	for _, name := range slices.Sorted(maps.Keys(aims)) {
		a := aims[name]
		v.Details = append(v.Details, fmt.Sprintf("%s: %s", name, a))
		if a.Cycles > 0 && a.Reached == 0 {
			missed = append(missed, fmt.Sprintf("%s NOT REACHED (0 of %d cycles)", name, a.Cycles))
		}
	}
	cycles, reached := 0, 0
	for _, a := range aims {
		cycles, reached = cycles+a.Cycles, reached+a.Reached
	}
	v.Cover(reached, "aimed cycles that reached their aim", "%d of %d aimed cycles that reached their aim", reached, cycles)
	if len(missed) > 0 {
		v.Undecided = strings.Join(missed, "; ")
	}
	return v
}
