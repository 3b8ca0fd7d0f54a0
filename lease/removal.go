package lease

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
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
//     removal is committed, AppendEntries of its term whose commit index
//     is the removal's own index, with the entries up to it that the node
//     lacks (tellRemoved): true facts of that term, which the follower's
//     Raft takes as any replication. The node concludes
//     it was removed only from a committed configuration that leaves it
//     out, after one that had it in (a node that joins may install a
//     snapshot older than its own addition first).
//
// A node that could not be reached for tellRemovedFor after it was removed
// learns nothing; it answers 503 no_leader until it is stopped.

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

	// A committed configuration that leaves this node out is a removal
	// only once the log stops growing past it (outOf): a node that joins
	// again after it was removed replays its own earlier removal before the
	// configuration that added it back reaches it. outSince is when the
	// node's last index was last seen to grow (zero: no removal in view).
	outSince time.Time
	outLast  uint64 // the last index then
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
// error with code api.CodeRemoved once it knows it was removed (in this
// process or, recorded in its data dir, an earlier one).
func (n *Node) Removal() error {
	if n.raft == nil {
		return nil
	}
	at := n.raft.removedAt()
	if at == 0 {
		return nil
	}
	return api.Errorf(api.CodeRemoved,
		"node %s was removed from the cluster (at log index %d) and serves nothing; ask another member", n.cfg.ID, at)
}

// LeftConfiguration reports whether the latest configuration leaves this
// node out after it had been in one: it is being removed, or was. Such a
// node does not register itself again (only an operator adds it back). It
// reads Raft's latest configuration now, not the membership watch's last
// look, so that a removal is seen the moment it reaches the log.
func (n *Node) LeftConfiguration() bool {
	if n.raft == nil {
		return false
	}
	n.raft.rm.mu.Lock()
	seen := n.raft.rm.seenSelf
	n.raft.rm.mu.Unlock()
	if !seen {
		return false
	}
	f := n.raft.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == n.cfg.ID {
			return false
		}
	}
	return true
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
		if commit, ok := e.latestConfCommitted(); ok && e.outOf(commit) {
			e.removedNow(commit, "a committed configuration leaves this node out")
		}
	}
	if in {
		e.rm.mu.Lock()
		e.rm.outSince = time.Time{}
		e.rm.mu.Unlock()
	}
}

// removalSettles is how long the log must stop growing past a committed
// configuration that leaves this node out before the node takes it as its
// removal: the leader replicates to a member at least every heartbeat, and
// to a removed node not at all (but for tellRemoved's one request).
func (e *raftEngine) removalSettles() time.Duration {
	return 2 * max(e.n.cfg.HeartbeatTimeout, e.n.cfg.ElectionTimeout)
}

// outOf reports whether the node, whose latest committed configuration
// (at commit) leaves it out, has stopped receiving entries for
// removalSettles: a node replaying the log after it joined again gets
// entries all along, up to the configuration that has it in again.
func (e *raftEngine) outOf(commit uint64) bool {
	last := max(e.raft.LastIndex(), commit)
	now := time.Now()
	e.rm.mu.Lock()
	defer e.rm.mu.Unlock()
	if e.rm.outSince.IsZero() || last != e.rm.outLast {
		e.rm.outSince, e.rm.outLast = now, last
		return false
	}
	return now.Sub(e.rm.outSince) >= e.removalSettles()
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

// tellRemovedFor bounds how long a leader keeps trying to tell a removed
// node of its removal while the node cannot be reached.
const tellRemovedFor = 30 * time.Second

// tellRemoved tells a follower that the configuration at index, which
// leaves it out, is committed: AppendEntries of this leader's term whose
// commit index is index, carrying the entries up to index that the node
// lacks (Raft's own replication to it stopped once the configuration was
// appended, possibly before the node had it; a node one entry behind was
// the common case). Each answer says how far the node's log goes, and
// the next request starts from there, as Raft's replication would. It
// retries for tellRemovedFor while the node cannot be reached, and gives
// up with a warning only then, when the node is in a later term (another
// leader is elected; it no longer has this node in its configuration
// either), or when the entries it lacks are no longer in this node's log.
func (e *raftEngine) tellRemoved(id, addr string, index, term uint64) {
	cfg := e.n.cfg
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(cfg.ID),
		Addr: e.trans.EncodePeer(raft.ServerID(cfg.ID), raft.ServerAddress(cfg.PeerAddr))}
	prev := index // first: a heartbeat whose previous entry is the removal itself
	var err error
	for deadline := time.Now().Add(tellRemovedFor); time.Now().Before(deadline); {
		var req *raft.AppendEntriesRequest
		if req, err = e.removalAppend(header, prev, index, term); err != nil {
			break
		}
		var resp raft.AppendEntriesResponse
		if err = e.trans.AppendEntries(raft.ServerID(id), raft.ServerAddress(addr), req, &resp); err == nil {
			if resp.Success {
				return
			}
			if resp.Term > term {
				err = fmt.Errorf("it is in term %d, after this leader's %d", resp.Term, term)
				break
			}
			// It lacks entries before index (or holds others there):
			// start again from its last entry, one further back each
			// time its log and this one differ there.
			err = fmt.Errorf("it does not hold the removal entry (its term %d, last index %d)", resp.Term, resp.LastLog)
			if prev == 0 {
				break
			}
			prev = min(resp.LastLog, prev-1)
			continue
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

// removalAppend builds tellRemoved's request: the entries after prev up to
// index, with prev as the previous entry and index as the commit index.
func (e *raftEngine) removalAppend(header raft.RPCHeader, prev, index, term uint64) (*raft.AppendEntriesRequest, error) {
	if index-prev > maxConfScan {
		return nil, fmt.Errorf("it lacks more than %d entries before the removal", maxConfScan)
	}
	req := &raft.AppendEntriesRequest{RPCHeader: header, Term: term, PrevLogEntry: prev, LeaderCommitIndex: index}
	if prev > 0 {
		var l raft.Log
		if err := e.store.GetLog(prev, &l); err != nil {
			return nil, fmt.Errorf("entry %d, before the ones it lacks, is no longer in this node's log: %w", prev, err)
		}
		req.PrevLogTerm = l.Term
	}
	for i := prev + 1; i <= index; i++ {
		l := new(raft.Log)
		if err := e.store.GetLog(i, l); err != nil {
			return nil, fmt.Errorf("entry %d, which it lacks, is no longer in this node's log: %w", i, err)
		}
		req.Entries = append(req.Entries, l)
	}
	return req, nil
}
