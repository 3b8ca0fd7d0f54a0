package lease_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// The fault harness's wall-step fault (jepsen/failpoint/wallstep.go) sets
// a node's wall step through POST /v1/debug/clock. In a node that is a
// step of its SkewClock's Wall only: the wall time the node stamps into
// entries. A step of the host's real system clock moves more: every
// reading of time.Now shows it in its wall part (its monotonic part runs
// on), and the leader's liveness decisions read time.Now. Stepping the
// real clock would step it for every process on the host, so these tests
// make each node's liveness clock show its own node's wall step in the
// same way instead (steppableLiveness), and then step the leader's wall
// clock with the harness's request.

// steppableLiveness makes the clock each node of c measures liveness on
// show the node's wall step as a stepped system clock would: in its wall
// reading only.
func steppableLiveness(c *servertest.Cluster) {
	for _, s := range c.Nodes {
		clock := s.Clock()
		lease.SetLivenessClock(s.Node(), func() time.Time { return lease.WallStepped(time.Now(), clock.WallStep()) })
	}
}

// stepWall steps s's wall clock as the harness's wall-step fault does.
func stepWall(t *testing.T, s *server.Server, step time.Duration) {
	t.Helper()
	d := api.Duration(step)
	body, err := json.Marshal(api.ClockSkew{WallStep: &d})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.HTTPURL()+"/v1/debug/clock", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.Clock().WallStep() != step {
		t.Fatalf("POST /v1/debug/clock wall_step %v: %d, step now %v", step, resp.StatusCode, s.Clock().WallStep())
	}
}

// member returns member id as s describes it (GET /v1/cluster), and whether it is there.
func member(t *testing.T, s *server.Server, id string) (api.Member, bool) {
	t.Helper()
	c, err := s.Node().Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if m.ID == id {
			return m, true
		}
	}
	return api.Member{}, false
}

// viewOf returns what the voter-set maintenance sees of id.
func viewOf(t *testing.T, view func() ([]lease.APMember, error), id string) lease.APMember {
	t.Helper()
	ms, err := view()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("%s is not in the configuration", id)
	return lease.APMember{}
}

// TestWallStepBack_DeadVoterNotKeptAlive: after the leader's wall clock is
// stepped back a day, a voter that died is still seen for what it is. A
// transfer to it is refused before the leader gives its lease up (the
// leader keeps serving), GET /v1/cluster shows its last contact as older
// than a heartbeat timeout, the voter-set maintenance sees it unhealthy,
// and replaces it with the standing-by non-voter after DeadVoterAfter.
//
// With an answer time kept on the wall clock alone, the dead voter's last
// answer would be a day in the leader's future: the transfer would be
// tried (and fail, with the lease given up), its last contact would be
// minus a day, and the maintenance would keep it as a healthy voter for a
// day.
func TestWallStepBack_DeadVoterNotKeptAlive(t *testing.T) {
	const after = 5 * time.Second
	tune := func(cfg *lease.Config) { cfg.Voters, cfg.DeadVoterAfter = 3, after }
	c := servertest.New(t, 3, tune)
	steppableLiveness(c)
	leader := c.WaitLeader()
	ls := c.Nodes[leader]
	hb := ls.Config().Node.HeartbeatTimeout

	nc := lease.DefaultConfig()
	tune(&nc)
	nc.ID, nc.DataDir, nc.Join, nc.NonVoter = "n4", filepath.Join(t.TempDir(), "n4"), ls.HTTPURL(), true
	s4, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", Logger: servertest.Logger(t, "n4")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s4.Abort() })
	servertest.WaitFor(t, 15*time.Second, "n4 to join as a non-voter", func() bool {
		m, ok := member(t, ls, "n4")
		return ok && !m.Voter
	})

	stepWall(t, ls, -24*time.Hour)
	view := lease.AutopilotView(ls.Node())
	f := c.Follower(leader)
	dead := c.Nodes[f].ID()
	c.Crash(f)
	time.Sleep(2 * hb) // its last answer is now older than a heartbeat timeout

	if m, ok := member(t, ls, dead); !ok || m.LastContact == nil || m.LastContact.D() < hb {
		t.Errorf("after the step the leader shows the dead voter %s as %+v, want a last contact at least %v ago", dead, m, hb)
	}
	_, err = ls.Node().TransferLeadership(context.Background(), dead)
	if api.CodeOf(err) != api.CodeTimeout || !strings.Contains(err.Error(), "leadership stays with") {
		t.Fatalf("transfer to the dead voter %s after a -24h step of the leader's wall clock: %v; want it refused before the leader gives anything up", dead, err)
	}
	if ok, _ := ls.Node().Leader(); !ok || ls.Node().Ready(context.Background()) != nil {
		t.Fatal("the leader stopped serving for a refused transfer")
	}
	if m := viewOf(t, view, dead); m.Healthy {
		t.Errorf("after the step the voter-set maintenance sees the dead voter %s healthy (down for %v)", dead, m.DownFor)
	}
	servertest.WaitFor(t, after+15*time.Second, "the leader to replace the dead voter with n4", func() bool {
		m, ok := member(t, ls, "n4")
		_, still := member(t, ls, dead)
		return ok && m.Voter && !still
	})
}

// TestWallStepForward_LiveVotersStayHealthy: after the leader's wall clock
// is stepped forward a day, the live voters stay healthy: the voter-set
// maintenance marks none of them dead, GET /v1/cluster shows their last
// contacts as recent, and a transfer to one is not refused.
//
// With an answer time kept on the wall clock alone, every answer would be
// a day old at the step: every member down for a day, dead at the
// maintenance's next tick, and every transfer refused.
func TestWallStepForward_LiveVotersStayHealthy(t *testing.T) {
	const after = 5 * time.Second
	c := servertest.New(t, 3, func(cfg *lease.Config) { cfg.Voters, cfg.DeadVoterAfter = 3, after })
	steppableLiveness(c)
	leader := c.WaitLeader()
	ls := c.Nodes[leader]
	hb := ls.Config().Node.HeartbeatTimeout
	view := lease.AutopilotView(ls.Node())
	viewOf(t, view, ls.ID())

	stepWall(t, ls, 24*time.Hour)
	for range 10 {
		ms, err := view()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if !m.Self && m.DownFor >= after {
				t.Fatalf("after a +24h step of the leader's wall clock the voter-set maintenance sees %s dead: down for %v", m.ID, m.DownFor)
			}
		}
		time.Sleep(hb / 2)
	}
	for _, s := range c.Nodes {
		if s == ls {
			continue
		}
		if m, ok := member(t, ls, s.ID()); !ok || m.LastContact == nil || m.LastContact.D() > time.Hour {
			t.Errorf("after the step the leader shows %s as %+v, want a recent last contact", s.ID(), m)
		}
	}
	to := c.Nodes[c.Follower(leader)].ID()
	var err error
	for range 20 {
		// A refusal leaves the leader as it was, so try again: a
		// transfer check can also fail on a slow machine.
		if _, err = ls.Node().TransferLeadership(context.Background(), to); err == nil || !strings.Contains(err.Error(), "leadership stays with") {
			break
		}
		time.Sleep(hb / 5)
	}
	if err != nil {
		t.Fatalf("transfer to the live voter %s after a +24h step of the leader's wall clock: %v", to, err)
	}
}
