package lease

import (
	"context"
	"time"

	"github.com/lockd/lockd/api"
)

// Leader reports whether this node serves leader requests itself, and
// otherwise the leader to forward them to (the zero LeaderAddr if
// unknown). In Raft mode that is Raft's own record of the leader, its id
// and peer address, with no look-up in the member table (MemberHTTP does
// that). A node that was made leader but has not yet established its term
// answers (false, zero): requests then get no_leader rather than a loop.
func (n *Node) Leader() (bool, api.LeaderAddr) {
	if n.Removal() != nil {
		return false, api.LeaderAddr{}
	}
	if n.currentTerm() != nil {
		return true, api.LeaderAddr{}
	}
	id, peer := n.eng.leaderAddr()
	if id == "" || id == n.cfg.ID {
		return false, api.LeaderAddr{}
	}
	to := api.LeaderAddr{ID: id, Peer: peer}
	if peer == "" {
		to.HTTP = n.eng.memberHTTP(id) // the classic modes: a map look-up
	}
	return false, to
}

// MemberHTTP returns the HTTP address of member id from the member table,
// "" if it has none.
func (n *Node) MemberHTTP(id string) string { return n.eng.memberHTTP(id) }

// Ready reports whether a default read can be served now, here or by
// forwarding.
func (n *Node) Ready(ctx context.Context) error {
	if err := n.Removal(); err != nil {
		return err
	}
	if p := n.storage.problem(); p != nil {
		return api.Errorf(p.Reason, "writes to this node's data dir fail: %s", p.Error)
	}
	if t := n.currentTerm(); t != nil {
		if t.leaseValid() {
			return nil
		}
		return errNoLeader("the leader's master lease has run out")
	}
	if _, to := n.Leader(); !to.Known() {
		return errNoLeader("no leader is known")
	}
	return nil
}

// Cluster describes the cluster as this node sees it.
func (n *Node) Cluster(ctx context.Context) (api.Cluster, error) {
	c := api.Cluster{NodeID: n.cfg.ID, Members: []api.Member{}}
	if id := n.eng.leaderID(); id != "" {
		c.Leader = &api.LeaderInfo{ID: id, HTTP: n.eng.memberHTTP(id)}
	}
	if t := n.currentTerm(); t != nil {
		d := api.Duration(t.leaseRemaining())
		c.MasterLeaseRemaining = &d
	}
	c.MasterLeaseFailures = n.leaseFailures.Load()
	c.StorageProblem = n.storage.problem()
	err := n.eng.describe(&c)
	return c, err
}

// AddMember adds a voter, or a non-voter if m.Voter is false (or updates a
// member's addresses), and records its HTTP address in the member table.
// A member already in the configuration keeps its role.
func (n *Node) AddMember(ctx context.Context, m api.Member) error {
	if _, err := n.leading(); err != nil {
		return err
	}
	return n.eng.addMember(ctx, m)
}

// RemoveMember removes a node from the cluster. Removing the leader itself
// makes it step down once committed.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	if _, err := n.leading(); err != nil {
		return err
	}
	return n.eng.removeMember(ctx, id)
}

// WaitLeader blocks until some node is known as leader, or ctx ends. It is
// a helper for start-up and tests.
func (n *Node) WaitLeader(ctx context.Context) error {
	for {
		if ok, to := n.Leader(); ok || to.Known() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
