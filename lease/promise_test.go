package lease_test

import (
	"testing"
	"time"

	"github.com/lockd/lockd/test/servertest"
)

// A follower promises only to the leader it follows, in the term it is in,
// for at most its heartbeat timeout; a leader promises nothing to anyone;
// a follower cut off from its leader stops promising.
func TestPromise_OnlyToTheLeaderAndTermFollowed(t *testing.T) {
	c := servertest.New(t, 3)
	l := c.WaitLeader()
	f := c.Nodes[c.Follower(l)].Node()
	leader := c.Nodes[l].Node()
	term := leader.Raft().CurrentTerm()
	hb := leader.Raft().ReloadableConfig().HeartbeatTimeout

	got := f.PromiseFor(term, leader.ID())
	if got <= 0 || got > hb {
		t.Fatalf("follower's promise to its leader = %v, want in (0, %v]", got, hb)
	}
	for _, tc := range []struct {
		name   string
		term   uint64
		leader string
	}{
		{"another leader", term, f.ID()},
		{"an unknown node", term, "nobody"},
		{"an earlier term", term - 1, leader.ID()},
		{"a later term", term + 1, leader.ID()},
	} {
		if got := f.PromiseFor(tc.term, tc.leader); got > 0 {
			t.Errorf("follower promised %v to %s", got, tc.name)
		}
	}
	if got := leader.PromiseFor(term, leader.ID()); got > 0 {
		t.Errorf("the leader promised %v to itself as a follower would", got)
	}

	c.Isolate(c.Follower(l))
	servertest.WaitFor(t, 5*time.Second, "the cut-off follower's promise to run out", func() bool {
		return f.PromiseFor(term, leader.ID()) <= 0
	})
	if got := f.PromiseFor(term, leader.ID()); got > 0 {
		t.Fatalf("promise came back while cut off: %v", got)
	}
}
