package server_test

import (
	"testing"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// TestCluster_SnapshotConfirmsQuorum checks that a snapshot is read as a
// consistent read: a leader cut off from the others, which cannot confirm
// that it still leads, serves none, whatever its lease says.
func TestCluster_SnapshotConfirmsQuorum(t *testing.T) {
	c := servertest.New(t, 3, func(nc *lease.Config) { nc.LeaderLeaseTimeout = nc.HeartbeatTimeout })
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	if st, e := l.do("GET", "/v1/snapshot", nil, nil); st != 200 {
		t.Fatalf("snapshot from the leader = %d %+v", st, e)
	}
	c.Isolate(leader)
	if st, e := l.do("GET", "/v1/snapshot", nil, nil); st != 503 || e.Code != api.CodeNoLeader {
		t.Fatalf("snapshot from a cut-off leader = %d %q, want 503 no_leader", st, e.Code)
	}
	c.Heal(leader)
}
