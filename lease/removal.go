package lease

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/httpapi/wire"
)

// A node removed from the cluster stops serving for good: it answers
// every request 410 removed, closes Removed (lockd serve then exits with
// status 0), and records the removal in its stable store, so that the
// process, if started again on the same data dir, still answers 410 until
// a member adds the node back (it then serves again) or the data dir is
// deleted and the node joins anew.
//
// How a node learns it was removed:
//
//   - A leader that removes itself: hashicorp/raft shuts Raft down once
//     the configuration without it is committed (ShutdownOnRemove).
//   - A follower: the leader replicates the configuration without it and
//     then stops replicating to it, so Raft alone never tells it that the
//     configuration was committed. The leader therefore sends it, once the
//     removal is committed, one heartbeat of its term whose commit index
//     is the removal's own index (tellRemoved): true facts of that term,
//     which the follower's Raft takes as any heartbeat. The node concludes
//     it was removed only from a committed configuration that leaves it
//     out, after one that had it in (a node that joins may install a
//     snapshot older than its own addition first).
//
// A node that could not be reached when it was removed learns nothing; it
// answers 503 no_leader until it is stopped.

// keyRemoved is where a node records, in its stable store, the commit
// index at which it learnt it was removed; 0 or absent while it is a
// member.
var keyRemoved = []byte("lockd_removed_at")

// membershipWatch is a raftEngine's view of its own membership.
type membershipWatch struct {
	ch   chan struct{} // closed when this process sees the node removed
	stop chan struct{} // closed by close: the watch ends
	done chan struct{} // closed when the watch has ended

	mu       sync.Mutex
	at       uint64 // the commit index at which the node learnt its removal; 0: member
	detected bool   // ch is closed
	seenSelf bool   // a configuration with this node in it was seen
}

// Removed returns a channel that is closed when this node learns, while it
// runs, that it was removed from the cluster. It never closes in the
// classic modes, whose membership is fixed.
func (n *Node) Removed() <-chan struct{} {
	if n.raft == nil {
		return nil
	}
	return n.raft.rm.ch
}

// Removal returns nil while the node is a member of the cluster, and an
// error with code wire.CodeRemoved once it knows it was removed (in this
// process or, recorded in its data dir, an earlier one).
func (n *Node) Removal() error {
	if n.raft == nil {
		return nil
	}
	at := n.raft.removedAt()
	if at == 0 {
		return nil
	}
	return wire.Errorf(wire.CodeRemoved,
		"node %s was removed from the cluster (at log index %d) and serves nothing; ask another member", n.cfg.ID, at)
}

func (e *raftEngine) removedAt() uint64 {
	e.rm.mu.Lock()
	defer e.rm.mu.Unlock()
	return e.rm.at
}

// loadRemoval reads the removal an earlier process recorded.
func (e *raftEngine) loadRemoval() error {
	at, err := e.stable.GetUint64(keyRemoved)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("lease: read %s: %w", keyRemoved, err)
	}
	if at != 0 {
		e.rm.at = at
		e.n.log.Warn("this node was removed from the cluster; it serves nothing (410 removed) until a member adds it back "+
			"(lockd members add), or its data dir is deleted and it joins again (--join)",
			"commit_index", at, "data_dir", e.n.cfg.DataDir)
	}
	return nil
}

// watchMembership checks the node's membership until close.
func (e *raftEngine) watchMembership() {
	defer close(e.rm.done)
	tick := time.NewTicker(max(e.n.cfg.HeartbeatTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-e.rm.stop:
			return
		case <-tick.C:
		}
		e.checkMembership()
	}
}

// checkMembership looks at the latest configuration: a node in it is a
// member (again); a node left out of a committed one it had been in, or
// whose Raft stopped by itself, was removed.
func (e *raftEngine) checkMembership() {
	if e.raft.State() == raft.Shutdown {
		if !e.n.isClosing() {
			e.removedNow(max(e.raft.CommitIndex(), 1), "Raft stopped after committing a configuration without this node")
		}
		return
	}
	f := e.raft.GetConfiguration()
	if f.Error() != nil || len(f.Configuration().Servers) == 0 {
		return
	}
	in := false
	for _, s := range f.Configuration().Servers {
		in = in || string(s.ID) == e.n.cfg.ID
	}
	e.rm.mu.Lock()
	seen, at := e.rm.seenSelf, e.rm.at
	readded := in && at != 0 && !e.rm.detected
	if in {
		e.rm.seenSelf = true
	}
	if readded {
		e.rm.at = 0
	}
	e.rm.mu.Unlock()
	switch {
	case readded:
		if err := e.stable.SetUint64(keyRemoved, 0); err != nil {
			e.n.log.Warn("could not clear the removal record", "err", err)
		}
		e.n.log.Info("this node is a member of the cluster again; it serves")
	case !in && seen && at == 0:
		if commit, ok := e.latestConfCommitted(); ok {
			e.removedNow(commit, "a committed configuration leaves this node out")
		}
	}
}

// maxConfScan bounds how many uncommitted log entries latestConfCommitted
// reads.
const maxConfScan = 4096

// latestConfCommitted reports whether the latest configuration is
// committed, and the commit index: it is unless a configuration entry
// follows the commit index in the log. (hashicorp/raft does not tell
// the index of the latest configuration.)
func (e *raftEngine) latestConfCommitted() (uint64, bool) {
	commit, last := e.raft.CommitIndex(), e.raft.LastIndex()
	if commit == 0 || last-commit > maxConfScan {
		return 0, false
	}
	for i := last; i > commit; i-- {
		var l raft.Log
		if err := e.store.GetLog(i, &l); err != nil || l.Type == raft.LogConfiguration {
			return 0, false
		}
	}
	return commit, true
}

// removedNow records the removal (at is the commit index it was learnt
// at), stops the node serving, and closes ch.
func (e *raftEngine) removedNow(at uint64, why string) {
	e.rm.mu.Lock()
	if e.rm.detected {
		e.rm.mu.Unlock()
		return
	}
	e.rm.at, e.rm.detected = at, true
	e.rm.mu.Unlock()
	if err := e.stable.SetUint64(keyRemoved, at); err != nil {
		e.n.log.Warn("could not record the removal in the data dir", "err", err)
	}
	e.n.log.Warn("this node was removed from the cluster and stops serving; "+
		"its data dir holds nothing the cluster needs and can be deleted "+
		"(to bring the node back, delete it and start the node with --join)",
		"why", why, "commit_index", at, "data_dir", e.n.cfg.DataDir)
	close(e.rm.ch)
}

// tellRemoved tells a follower that the configuration at index, which
// leaves it out, is committed: one heartbeat of this leader's term with
// the entry at index as its previous entry and index as the commit index.
// Raft's own replication to the node stopped at that entry, and sends no
// commit index that covers it. It tries a few times within a few
// heartbeat timeouts, then gives up with a warning: the node then answers
// no_leader until it is stopped by hand.
func (e *raftEngine) tellRemoved(id, addr string, index, term uint64) {
	cfg := e.n.cfg
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(cfg.ID),
			Addr: e.trans.EncodePeer(raft.ServerID(cfg.ID), raft.ServerAddress(cfg.PeerAddr))},
		Term: term, PrevLogEntry: index, PrevLogTerm: term, LeaderCommitIndex: index,
	}
	var err error
	for range 5 {
		var resp raft.AppendEntriesResponse
		if err = e.trans.AppendEntries(raft.ServerID(id), raft.ServerAddress(addr), req, &resp); err == nil {
			if !resp.Success {
				err = fmt.Errorf("it does not hold the removal entry (its term %d, last index %d)", resp.Term, resp.LastLog)
				break
			}
			return
		}
		select {
		case <-e.n.stop:
			return
		case <-time.After(cfg.HeartbeatTimeout):
		}
	}
	e.n.log.Warn("could not tell a removed node that its removal is committed; it answers no_leader until it is stopped",
		"id", id, "peer", addr, "err", err)
}
