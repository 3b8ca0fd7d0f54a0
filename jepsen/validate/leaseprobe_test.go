package validate

import (
	"strings"
	"testing"
)

// TestCheckLeaseProbes feeds the outside witness hand-made lease logs and
// probes: a probe answered inside its node's logged interval is clean; one
// answered after the node's lease ended, one by a node that never logged
// a line, and one inside another node's interval only are violations.
func TestCheckLeaseProbes(t *testing.T) {
	const ms = int64(1e6)
	lines := []LeaseLine{
		{Node: "n1", Term: 2, From: 1000 * ms, Until: 1500 * ms},
		{Node: "n1", Term: 2, From: 1400 * ms, Until: 1900 * ms}, // a renewal
		{Node: "n1", Term: 2, From: 1700 * ms, Until: 1700 * ms}, // gave the lease up at 1.7 s
		{Node: "n2", Term: 3, From: 2500 * ms, Until: 3000 * ms},
	}
	clean := []LeaseProbe{
		{Node: "n1", Sent: 1100 * ms, Answered: 1102 * ms},
		{Node: "n1", Sent: 1690 * ms, Answered: 1720 * ms}, // answered at some moment before 1.7 s
		{Node: "n2", Sent: 2990 * ms, Answered: 3005 * ms},
	}
	base := CheckMasterLease(lines, 0, false)
	if !base.OK() {
		t.Fatalf("the logs alone: %v %v", base, base.Details)
	}
	if v := CheckLeaseProbes(base, lines, clean); !v.OK() {
		t.Errorf("probes inside the logged intervals: %v\n%s", v, strings.Join(v.Details, "\n"))
	}
	for _, p := range []LeaseProbe{
		{Node: "n1", Sent: 1750 * ms, Answered: 1753 * ms}, // after n1 gave its lease up
		{Node: "n3", Sent: 1100 * ms, Answered: 1102 * ms}, // n3 never logged a lease
		{Node: "n1", Sent: 2600 * ms, Answered: 2601 * ms}, // inside n2's lease, not n1's
	} {
		v := CheckLeaseProbes(base, lines, append(clean, p))
		if v.Violations != 1 || !strings.Contains(strings.Join(v.Details, "\n"), p.Node+" answered") {
			t.Errorf("probe %+v: %v\n%s", p, v, strings.Join(v.Details, "\n"))
		}
	}
	// The logs alone pass a node that served without a line; the witness
	// does not.
	v := CheckLeaseProbes(CheckMasterLease(lines[:3], 0, false), lines[:3], []LeaseProbe{{Node: "n2", Sent: 2600 * ms, Answered: 2601 * ms}})
	if v.Violations != 1 {
		t.Errorf("a node serving with no line: %v", v)
	}
}
