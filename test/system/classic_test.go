package system

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/classic"
)

// TestClassic_BullyClusterServesAndFailsOver runs a 3-node cluster whose
// coordinator is chosen by the bully algorithm: the highest id coordinates
// and serves locks; killed, the next highest takes over with empty state.
func TestClassic_BullyClusterServesAndFailsOver(t *testing.T) {
	c := mustStartCluster(t, 3, "--election", "bully")
	coord := c.waitLeader(15 * time.Second)
	if coord != 2 {
		t.Fatalf("bully elected n%d, want the highest id n3", coord+1)
	}
	// Any node forwards to the coordinator.
	front := c.procs[0].http
	sid := newSession(t, front, time.Minute)
	tok, st, e := acquire(front, "jobs", sid)
	if st != 200 || tok == 0 {
		t.Fatalf("acquire through n1: %d %s", st, e.Message)
	}
	var cl api.Cluster
	mustDo(t, front, "GET", "/v1/cluster", nil, &cl)
	if cl.Mode != "bully" || cl.Coordinator != "n3" || cl.Election == nil {
		t.Fatalf("cluster view = mode %q coordinator %q stats %+v", cl.Mode, cl.Coordinator, cl.Election)
	}

	c.procs[coord].kill9()
	waitFor(t, 15*time.Second, "n2 to take over", func() bool {
		var cl api.Cluster
		st, _ := doJSON(c.procs[1].http, "GET", "/v1/cluster", nil, &cl)
		return st == 200 && cl.State == "coordinator" && cl.MasterLeaseRemaining != nil
	})
	// The new coordinator never saw the session: state is not replicated.
	if st, e := doJSON(front, "GET", "/v1/sessions/"+sid, nil, nil); st != 410 {
		t.Fatalf("old session on the new coordinator = %d %s, want 410 (state is lost in classic modes)", st, e.Code)
	}
	other := newSession(t, front, time.Minute)
	tok2, st, e := acquire(front, "jobs", other)
	if st != 200 {
		t.Fatalf("acquire on the new coordinator: %d %s", st, e.Message)
	}
	t.Logf("tokens: %d before, %d after the takeover", tok, tok2)
	mustDo(t, front, "GET", "/v1/cluster", nil, &cl)
	if cl.Coordinator != "n2" {
		t.Fatalf("coordinator after kill = %q", cl.Coordinator)
	}
	if cl.Election.ElectionsStarted == 0 || cl.Election.Received["coordinator"] == 0 {
		t.Fatalf("election counters after a takeover: %+v", cl.Election)
	}
}

// TestClassic_EmergentClusterRolesAndFailover runs five processes with
// --election emergent (default pool limits 3 and 5): one master, the
// others slaves or idle, each node's role in GET /v1/cluster and in
// `lockd status`; the master is killed and a slave takes over.
func TestClassic_EmergentClusterRolesAndFailover(t *testing.T) {
	c := mustStartCluster(t, 5, "--election", "emergent")
	coord := c.waitLeader(20 * time.Second)
	roles := func(skip int) (map[string]string, bool) {
		out := map[string]string{}
		masters := 0
		for i, p := range c.procs {
			if i == skip {
				continue
			}
			var cl api.Cluster
			if st, _ := doJSON(p.http, "GET", "/v1/cluster", nil, &cl); st != 200 || cl.Election == nil {
				return nil, false
			}
			out[cl.NodeID] = cl.Election.Role
			if cl.Election.Role == "master" {
				masters++
			}
			if cl.Election.Role == "candidate" {
				return nil, false
			}
		}
		return out, masters == 1
	}
	// Settled: at least classic.DefaultPoolLower slaves. Below it each
	// idle node promotes itself within its trigger jitter, and one that
	// did so after this sample could win the election below as a slave.
	var before map[string]string
	waitFor(t, 15*time.Second, "one master, at least 3 slaves, the rest idle", func() bool {
		var ok bool
		before, ok = roles(-1)
		slaves := 0
		for _, r := range before {
			if r == "slave" {
				slaves++
			}
		}
		return ok && before[fmt.Sprintf("n%d", coord+1)] == "master" && slaves >= classic.DefaultPoolLower
	})
	status := mustCLI(t, []string{c.procs[0].http}, "status")
	if !strings.Contains(status, "emergent role") {
		t.Fatalf("lockd status shows no emergent role:\n%s", status)
	}
	c.procs[coord].kill9()
	var after map[string]string
	waitFor(t, 20*time.Second, "a new master", func() bool {
		var ok bool
		after, ok = roles(coord)
		return ok
	})
	for id, r := range after {
		if r == "master" && before[id] != "slave" {
			t.Fatalf("new master %s was %s before (roles %v, then %v)", id, before[id], before, after)
		}
	}
	t.Logf("roles %v, then %v", before, after)
}
