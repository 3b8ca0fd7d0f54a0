package system

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// TestNonVoters_DeadVotersReplaced starts 5 processes, 3 voters and 2
// non-voters, with --voters 3 and --dead-voter-after 3s, and kills -9 a
// follower voter and then, once the first is replaced, the leader, while
// workers take and release locks. The leader promotes a non-voter for
// each dead voter and removes the dead one; the cluster keeps serving;
// every acknowledged acquire's token increases per lock and no two holds
// overlap; the locks held at the end are visible with their tokens; the
// leader counts its changes in lockd_autopilot_changes_total; and "lockd
// status", run as a process, shows the new roles.
func TestNonVoters_DeadVotersReplaced(t *testing.T) {
	bin := mustBuild(t)
	start := time.Now()
	c, _ := startCluster(t, proccluster.Config{Binary: bin, Nodes: 5, Voters: 3, NonVoters: 2,
		KeepVoters: 3, DeadVoterAfter: 3 * time.Second, Dir: t.TempDir()})
	ctx := context.Background()
	all := c.Endpoints()
	roles := func() map[string]string {
		out := map[string]string{}
		for _, m := range cliMembers(t, all) {
			out[m.ID] = map[bool]string{true: "voter", false: "non-voter"}[m.Voter]
		}
		return out
	}
	waitFor(t, 20*time.Second, "3 voters and 2 non-voters", func() bool {
		r := roles()
		return len(r) == 5 && r["n1"] == "voter" && r["n2"] == "voter" && r["n3"] == "voter" &&
			r["n4"] == "non-voter" && r["n5"] == "non-voter"
	})
	w := startMemberWorkload(t, all, 4)
	time.Sleep(time.Second)

	// The first victim is a follower voter, the second the leader.
	leader := c.Leader(ctx)
	if leader == nil {
		t.Fatal("no leader")
	}
	var first *proccluster.Node
	for _, n := range c.Nodes[:3] {
		if n != leader {
			first = n
			break
		}
	}
	alive := func(except ...*proccluster.Node) []*proccluster.Node {
		var out []*proccluster.Node
		for _, n := range c.Nodes {
			if !slices.Contains(except, n) {
				out = append(out, n)
			}
		}
		return out
	}
	replaced := func(dead ...*proccluster.Node) func() bool {
		return func() bool {
			var live []string
			for _, n := range alive(dead...) {
				live = append(live, n.HTTP)
			}
			ms := cliMembers(t, live)
			ids := map[string]bool{}
			voters := 0
			for _, m := range ms {
				ids[m.ID] = true
				if m.Voter {
					voters++
				}
			}
			for _, d := range dead {
				if ids[d.ID] {
					return false
				}
			}
			return voters == 3 && len(ms) == 5-len(dead)
		}
	}
	first.Kill()
	killed1 := time.Now()
	waitFor(t, 25*time.Second, first.ID+" replaced by a non-voter and removed", replaced(first))
	t.Logf("%s replaced %v after kill -9", first.ID, time.Since(killed1).Round(time.Millisecond))
	time.Sleep(time.Second)

	leader = c.Leader(ctx)
	if leader == nil {
		t.Fatal("no leader after the first replacement")
	}
	leader.Kill()
	killed2 := time.Now()
	waitFor(t, 30*time.Second, "the killed leader "+leader.ID+" replaced too", replaced(first, leader))
	t.Logf("leader %s replaced %v after kill -9", leader.ID, time.Since(killed2).Round(time.Millisecond))
	newLeader, err := c.WaitLeader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	w.halt()

	// lockd status, as a process, shows the three remaining members, all
	// voters now, one of them the leader.
	var live []string
	for _, n := range alive(first, leader) {
		live = append(live, n.HTTP)
	}
	status := mustCLI(t, live, "status")
	for _, n := range alive(first, leader) {
		role := "voter"
		if n == newLeader {
			role = "leader"
		}
		if !hasRow(status, n.ID, role) {
			t.Errorf("lockd status: want %s as %s:\n%s", n.ID, role, status)
		}
	}
	if strings.Contains(status, "non-voter") || hasRow(status, first.ID, "") || hasRow(status, leader.ID, "") {
		t.Errorf("lockd status still shows a non-voter or a dead voter:\n%s", status)
	}

	// The leader that made the second replacement counted it.
	if body := metricsOf(t, newLeader.HTTP); !strings.Contains(body, `lockd_autopilot_changes_total{kind="promote"} 1`) ||
		!strings.Contains(body, `lockd_autopilot_changes_total{kind="remove"} 1`) {
		t.Errorf("leader %s's metrics: want one promotion and one removal:\n%s", newLeader.ID, grepLines(body, "lockd_autopilot"))
	}

	w.check(ctx, t, live, "the replacements")
	t.Logf("%d acknowledged acquires checked; whole test %v", len(w.holds), time.Since(start).Round(time.Millisecond))
}

// hasRow reports whether the table has a row starting with id whose last
// column is role (any role if role is "").
func hasRow(table, id, role string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == id && (role == "" || f[len(f)-1] == role) {
			return true
		}
	}
	return false
}

// metricsOf fetches a node's /metrics.
func metricsOf(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
