package lease

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/httpapi/wire"
)

// Leader reports whether this node serves leader requests itself, and
// otherwise the HTTP address of the leader ("" if unknown). A node that Raft
// made leader but that has not yet established its term answers (false,
// ""): requests then get no_leader rather than a loop.
func (n *Node) Leader() (bool, string) {
	if n.currentTerm() != nil {
		return true, ""
	}
	_, id := n.raft.LeaderWithID()
	if id == "" || string(id) == n.cfg.ID {
		return false, ""
	}
	return false, n.memberHTTP(string(id))
}

func (n *Node) memberHTTP(id string) string {
	for _, m := range n.fsm.Members() {
		if m.ID == id {
			return m.HTTP
		}
	}
	return ""
}

// Ready reports whether a default read can be served now, here or by
// forwarding.
func (n *Node) Ready(ctx context.Context) error {
	if t := n.currentTerm(); t != nil {
		if t.leaseValid() {
			return nil
		}
		return errNoLeader("the leader's master lease has run out")
	}
	if _, http := n.Leader(); http == "" {
		return errNoLeader("no leader is known")
	}
	return nil
}

// Cluster describes the cluster as this node sees it.
func (n *Node) Cluster(ctx context.Context) (wire.Cluster, error) {
	c := wire.Cluster{
		Mode:         "raft",
		NodeID:       n.cfg.ID,
		State:        n.raft.State().String(),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		Members:      []wire.Member{},
	}
	_, leaderID := n.raft.LeaderWithID()
	if leaderID != "" {
		c.Leader = &wire.LeaderInfo{ID: string(leaderID), HTTP: n.memberHTTP(string(leaderID))}
	}
	if t := n.currentTerm(); t != nil {
		d := wire.Duration(t.leaseRemaining())
		c.MasterLeaseRemaining = &d
	}
	known := map[string]fsm.Member{}
	for _, m := range n.fsm.Members() {
		known[m.ID] = m
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return c, raftErr(err)
	}
	for _, s := range f.Configuration().Servers {
		m := wire.Member{ID: string(s.ID), Peer: string(s.Address), HTTP: known[string(s.ID)].HTTP,
			Voter: s.Suffrage == raft.Voter, Leader: s.ID == leaderID}
		c.Members = append(c.Members, m)
	}
	return c, nil
}

// AddMember adds a voter (or updates a member's addresses) and records its
// HTTP address in the member table.
func (n *Node) AddMember(ctx context.Context, m wire.Member) error {
	if _, err := n.leading(); err != nil {
		return err
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftErr(err)
	}
	present := false
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == m.ID && string(s.Address) == m.Peer {
			present = true
		}
	}
	if !present {
		if err := n.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.Peer), 0, n.cfg.ApplyTimeout).Error(); err != nil {
			return raftErr(err)
		}
		n.log.Info("added voter", "id", m.ID, "peer", m.Peer)
	}
	res, err := n.propose(ctx, fsm.Command{Op: fsm.OpSetMember, Member: &fsm.Member{ID: m.ID, Peer: m.Peer, HTTP: m.HTTP}})
	if err != nil {
		return err
	}
	return n.apiErr(res.Err, "", "member")
}

// RemoveMember removes a node from the Raft configuration and the member
// table. Removing the leader itself makes it step down once committed.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	if _, err := n.leading(); err != nil {
		return err
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftErr(err)
	}
	found := false
	for _, s := range f.Configuration().Servers {
		found = found || string(s.ID) == id
	}
	if !found {
		return wire.Errorf(wire.CodeNotFound, "no member %q in the cluster", id)
	}
	if _, err := n.propose(ctx, fsm.Command{Op: fsm.OpRemoveMember, Member: &fsm.Member{ID: id}}); err != nil {
		return err
	}
	if id == n.cfg.ID {
		if t := n.currentTerm(); t != nil {
			t.giveUpLease()
		}
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return raftErr(err)
	}
	n.log.Info("removed member", "id", id)
	return nil
}

// WaitLeader blocks until some node is known as leader, or ctx ends. It is
// a helper for start-up and tests.
func (n *Node) WaitLeader(ctx context.Context) error {
	for {
		if ok, http := n.Leader(); ok || http != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
