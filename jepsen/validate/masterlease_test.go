package validate

import (
	"fmt"
	"strings"
	"testing"
)

// ms builds a lease log line with times in milliseconds.
func ms(node string, term uint64, from, until int64) string {
	return fmt.Sprintf("%s %d %d %d", node, term, from*1e6, until*1e6)
}

func TestCheckMasterLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		logs []string // each a node's whole log
		want int      // violations
		skip int      // unreadable lines
	}{
		{name: "one leader renewing", logs: []string{
			ms("n1", 2, 100, 500) + "\n" + ms("n1", 2, 200, 600) + "\n" + ms("n1", 2, 300, 700) + "\n",
		}},
		{name: "failover after the old lease ran out", logs: []string{
			ms("n1", 2, 100, 500) + "\n",
			ms("n2", 3, 900, 1300) + "\n" + ms("n2", 3, 1000, 1400) + "\n",
		}},
		{name: "touching intervals", logs: []string{
			ms("n1", 2, 100, 500) + "\n",
			ms("n2", 3, 500, 900) + "\n",
		}},
		// Two nodes leading in terms 2 and 3 with overlapping leases:
		// Raft's one leader per term holds, lockd's promise does not.
		{name: "leaders of terms 2 and 3 overlap", want: 1, logs: []string{
			ms("n1", 2, 100, 500) + "\n" + ms("n1", 2, 200, 600) + "\n",
			ms("n2", 3, 550, 950) + "\n",
		}},
		{name: "a stop line ends the lease early", logs: []string{
			ms("n1", 2, 100, 500) + "\n" + ms("n1", 2, 300, 300) + "\n",
			ms("n2", 3, 400, 800) + "\n",
		}},
		{name: "without the stop line the same leases overlap", want: 1, logs: []string{
			ms("n1", 2, 100, 500) + "\n",
			ms("n2", 3, 400, 800) + "\n",
		}},
		// A clock change while the lease runs: the revised line shortens it.
		{name: "revision shortens the interval", logs: []string{
			ms("n1", 2, 100, 900) + "\n" + ms("n1", 2, 200, 450) + "\n",
			ms("n2", 3, 500, 900) + "\n",
		}},
		{name: "revision lengthens the interval into the next leader's", want: 1, logs: []string{
			ms("n1", 2, 100, 450) + "\n" + ms("n1", 2, 200, 700) + "\n",
			ms("n2", 3, 500, 900) + "\n",
		}},
		// kill -9 in the middle of a write: the cut last line is skipped,
		// and the lines before it count.
		{name: "partial last line tolerated", skip: 1, logs: []string{
			ms("n1", 2, 100, 500) + "\n" + "n1 2 3000000",
			ms("n2", 3, 600, 900) + "\n",
		}},
		{name: "partial last line does not hide an earlier overlap", want: 1, skip: 1, logs: []string{
			ms("n1", 2, 100, 700) + "\n" + "n1 2 30",
			ms("n2", 3, 600, 900) + "\n",
		}},
		// A restarted node's first line ends its previous process's lease.
		{name: "restart ends the old process's lease", logs: []string{
			ms("n1", 2, 100, 800) + "\n" + ms("n1", 4, 450, 450) + "\n",
			ms("n2", 3, 500, 900) + "\n",
		}},
		{name: "two nodes with a lease in one term", want: 1, logs: []string{
			ms("n1", 5, 100, 200) + "\n",
			ms("n2", 5, 300, 400) + "\n",
		}},
		{name: "a stop line alone is no lease", logs: []string{
			ms("n1", 5, 100, 100) + "\n",
			ms("n2", 5, 300, 400) + "\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []LeaseLine
			skipped := 0
			for _, l := range tc.logs {
				ls, sk, err := ParseLeaseLog(strings.NewReader(l))
				if err != nil {
					t.Fatal(err)
				}
				lines, skipped = append(lines, ls...), skipped+sk
			}
			if skipped != tc.skip {
				t.Errorf("skipped %d lines, want %d", skipped, tc.skip)
			}
			v := CheckMasterLease(lines, skipped, false)
			if v.Violations != tc.want || v.Undecided != "" {
				t.Errorf("%s, want %d violation(s)\n%s", v, tc.want, strings.Join(v.Details, "\n"))
			}
		})
	}
}

func TestCheckMasterLease_NoEvidenceIsUndecided(t *testing.T) {
	if v := CheckMasterLease(nil, 0, false); v.Undecided == "" {
		t.Errorf("no lease lines passed: %s", v)
	}
	if v := CheckMasterLease(nil, 0, true); !v.OK() {
		t.Errorf("classic mode: %s", v)
	}
}

// Raft's one leader per term holds for the history of "leaders of terms 2
// and 3 overlap"; the leaders checker keeps checking it and passes it.
func TestCheckLeaders_OverlapAcrossTermsPassesRaftsCheck(t *testing.T) {
	samples := []Sample{{Round: 1, Node: "n1", State: "Leader", Term: 2}, {Round: 1, Node: "n2", State: "Leader", Term: 3}}
	if v := CheckLeaders(samples, false); v.Violations != 0 {
		t.Fatalf("leaders: %s", v)
	}
}

// One stretch of overlap is one violation, however many renewals the
// leases took in it.
func TestCheckMasterLease_RenewalsMerge(t *testing.T) {
	var n1, n2 []string
	for i := int64(0); i < 5; i++ {
		n1 = append(n1, ms("n1", 2, 100+100*i, 500+100*i))
		n2 = append(n2, ms("n2", 3, 600+100*i, 1000+100*i))
	}
	var lines []LeaseLine
	for _, l := range []string{strings.Join(n1, "\n"), strings.Join(n2, "\n")} {
		ls, _, _ := ParseLeaseLog(strings.NewReader(l))
		lines = append(lines, ls...)
	}
	if v := CheckMasterLease(lines, 0, false); v.Violations != 1 {
		t.Fatalf("%s, want 1 violation\n%s", v, strings.Join(v.Details, "\n"))
	}
}
