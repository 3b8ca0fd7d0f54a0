package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// raftEngine replicates the FSM with hashicorp/raft, its log and stable
// store in raft-wal (or, in older data dirs, bbolt through raft-boltdb)
// and its snapshots in files under DataDir.
type raftEngine struct {
	n      *Node
	raft   *raft.Raft
	store  logStore
	stable *stableStore // guards store's stable-store role across close
	trans  *guardedTransport
	x      *exchange // the lease exchange, both sides
	rm     membershipWatch
	// liveClock, if set, replaces time.Now as the clock liveness is
	// measured on (liveness.go): tests set it to step its wall reading.
	liveClock atomic.Pointer[func() time.Time]
}

func newRaftEngine(n *Node) *raftEngine {
	return &raftEngine{n: n, rm: membershipWatch{ch: make(chan struct{})}}
}

// open opens the stores, waits out the promise this node may have made
// before it restarted (see bootWait), starts Raft, and bootstraps a new
// cluster if the node has no state and is not joining.
func (e *raftEngine) open() error {
	cfg := e.n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("lease: data dir: %w", err)
	}
	raw, err := openLogStore(cfg.DataDir, cfg.LogStore)
	if err != nil {
		return err
	}
	store := watchedLogs{logStore: raw, w: e.n.storage}
	e.store, e.stable = store, &stableStore{s: store}
	if !cfg.NoBootWait {
		err = bootWait(store, cfg.HeartbeatTimeout)
	}
	if err == nil {
		err = e.loadRemoval()
	}
	if err == nil {
		err = e.start(newRaftLogger(cfg.Logger, cfg.RaftLogLevel))
	}
	if err != nil {
		store.Close()
		return explainDiskFull(cfg.DataDir, err)
	}
	return nil
}

// keyPromise is where a node records the heartbeat timeout its promises
// run for, in its stable store.
var keyPromise = []byte("lockd_promise_timeout")

// bootWait keeps the promise a node may have made before it restarted: a
// follower that heard from a leader does not vote for anyone else for its
// heartbeat timeout, and a restarted process has forgotten whom it heard
// from. So it waits the longer of the timeout it runs with now and the one
// it ran with before (recorded here), and then records the one it runs
// with now.
func bootWait(store raft.StableStore, hb time.Duration) error {
	prev, err := store.GetUint64(keyPromise)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("lease: read %s: %w", keyPromise, err)
	}
	time.Sleep(max(hb, time.Duration(prev)))                        //nolint:gosec // G115: prev is a heartbeat timeout this code stored from a positive Duration
	if err := store.SetUint64(keyPromise, uint64(hb)); err != nil { //nolint:gosec // G115: a heartbeat timeout, positive
		return fmt.Errorf("lease: record %s: %w", keyPromise, err)
	}
	return nil
}

func (e *raftEngine) start(hl hclog.Logger) error {
	cfg := e.n.cfg
	snaps, err := openSnapshotStore(cfg.DataDir, e.n.storage, hl)
	if err != nil {
		return fmt.Errorf("lease: snapshot store: %w", err)
	}
	logs, err := raft.NewLogCache(1024, e.store)
	if err != nil {
		return err
	}
	e.trans = newGuardedTransport(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: cfg.Stream, MaxPool: 3, Timeout: 5 * time.Second, Logger: hl,
	}), raft.ServerID(cfg.ID), &e.n.count.guard)
	existing, err := raft.HasExistingState(logs, e.stable, snaps)
	if err != nil {
		return fmt.Errorf("lease: read state: %w", err)
	}
	a := raftFSM{f: e.n.fsm, snaps: &e.n.count.snaps}
	if a.unsafe, err = e.unsafeReplay(logs); err != nil {
		_ = e.trans.Close()
		return err
	}
	r, err := raft.NewRaft(e.raftConfig(hl), a, logs, e.stable, snaps, e.trans)
	if err != nil {
		_ = e.trans.Close()
		return fmt.Errorf("lease: start raft: %w", err)
	}
	e.raft = r
	e.trans.start(r, e.beforeTimeoutNow)
	if e.n.leaseLog != nil {
		// Raft calls an observer's filter on its own goroutine as it
		// changes state, before it handles anything else (a vote request
		// among them): the lease log's line that this node stopped serving
		// is written before the node can vote for another leader.
		r.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
			if st, ok := o.Data.(raft.RaftState); ok && st != raft.Leader {
				e.n.leadershipLost()
			}
			return false
		}))
	}
	if !existing && cfg.Join == "" {
		boot := e.bootstrapConfiguration()
		if err := r.BootstrapCluster(boot).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = r.Shutdown().Error()
			return fmt.Errorf("lease: bootstrap: %w", err)
		}
		e.n.log.Info("bootstrapped cluster", "voters", len(boot.Servers))
	}
	e.x = newExchange(cfg.LeaseLayer, e.promise)
	e.x.released = e.released
	e.x.applied = r.AppliedIndex
	e.x.serve()
	e.rm.stop, e.rm.done = make(chan struct{}), make(chan struct{})
	go e.watchMembership()
	return nil
}

func (e *raftEngine) raftConfig(hl hclog.Logger) *raft.Config {
	cfg := e.n.cfg
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.BatchApplyCh = true
	rc.ParallelLeaderAppend = cfg.ParallelAppend
	rc.NotifyFollowersOfCommit = cfg.NotifyCommit
	rc.Logger = hl
	return rc
}

// clockChanged makes Raft's timers run at the rate of the node's clock:
// hashicorp/raft measures its heartbeat and election timeouts on the
// system clock, so a node whose clock runs at rate r (a fault the harness
// injects) times out after the nominal timeouts of its configuration
// divided by r, as a node whose clock really ran at that rate would. Rate
// 1 restores the nominal timeouts. Raft requires the heartbeat timeout to
// stay at least LeaderLeaseTimeout (which it cannot reload), so a rate
// that would take it lower is held there, and the node logs it.
func (e *raftEngine) clockChanged() {
	if e.raft == nil {
		return
	}
	cfg := e.n.cfg
	rate := clockRate(e.n.clock)
	rc := e.raft.ReloadableConfig()
	rc.HeartbeatTimeout = time.Duration(float64(cfg.HeartbeatTimeout) / rate)
	if rc.HeartbeatTimeout < cfg.LeaderLeaseTimeout {
		e.n.log.Warn("heartbeat timeout held at the leader lease timeout: Raft allows no shorter one",
			"rate", rate, "wanted", rc.HeartbeatTimeout, "held", cfg.LeaderLeaseTimeout)
		rc.HeartbeatTimeout = cfg.LeaderLeaseTimeout
	}
	rc.ElectionTimeout = max(time.Duration(float64(cfg.ElectionTimeout)/rate), rc.HeartbeatTimeout)
	if err := e.raft.ReloadConfig(rc); err != nil {
		e.n.log.Warn("could not make Raft's timers follow the clock", "rate", rate, "err", err)
		return
	}
	e.n.log.Info("Raft's timers follow the clock", "rate", rate,
		"heartbeat_timeout", rc.HeartbeatTimeout, "election_timeout", rc.ElectionTimeout)
}

// clockRate is the rate of c against real time: 1 unless c says otherwise
// (SkewClock).
func clockRate(c Clock) float64 {
	if r, ok := c.(interface{ Rate() float64 }); ok {
		if x := r.Rate(); x > 0 {
			return x
		}
	}
	return 1
}

func (e *raftEngine) bootstrapConfiguration() raft.Configuration {
	peers := e.n.cfg.InitialCluster
	if len(peers) == 0 {
		peers = []Peer{{ID: e.n.cfg.ID, Addr: e.n.cfg.PeerAddr}}
	}
	var c raft.Configuration
	for _, p := range peers {
		c.Servers = append(c.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr),
		})
	}
	return c
}

func (e *raftEngine) state() (bool, uint64) {
	return e.raft.State() == raft.Leader, e.raft.CurrentTerm()
}

func (e *raftEngine) leaderID() string {
	_, id := e.raft.LeaderWithID()
	return string(id)
}

// leaderAddr is Raft's own record of the leader: its id and the address
// it replicates from, which is its peer address. No member table is read.
func (e *raftEngine) leaderAddr() (string, string) {
	addr, id := e.raft.LeaderWithID()
	return string(id), string(addr)
}

func (e *raftEngine) leaderCh() <-chan bool { return e.raft.LeaderCh() }

func (e *raftEngine) barrier(timeout time.Duration) error { return e.raft.Barrier(timeout).Error() }

func (e *raftEngine) apply(data []byte, timeout time.Duration) (any, error) {
	f := e.raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		return nil, raftErr(err)
	}
	return f.Response(), nil
}

// transfer hands leadership over, if there is anyone to hand it to.
func (e *raftEngine) transfer() error {
	if e.raft.State() != raft.Leader || len(e.servers()) < 2 {
		return nil
	}
	return e.raft.LeadershipTransfer().Error()
}

func (e *raftEngine) servers() []raft.Server {
	f := e.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

func (e *raftEngine) close() error {
	var err error
	if e.rm.stop != nil {
		close(e.rm.stop)
		<-e.rm.done
	}
	if e.x != nil {
		e.x.close()
	}
	if e.raft != nil {
		err = e.raft.Shutdown().Error()
	}
	if e.trans != nil {
		_ = e.trans.Close()
	}
	if e.store != nil {
		e.stable.close()
		if cerr := e.store.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (e *raftEngine) memberHTTP(id string) string { return e.member(id).HTTP }

// member is id's entry in the member table, zero if it has none.
func (e *raftEngine) member(id string) fsm.Member {
	for _, m := range e.n.fsm.Members() {
		if m.ID == id {
			return m
		}
	}
	return fsm.Member{}
}

func (e *raftEngine) describe(c *api.Cluster) error {
	c.Mode = "raft"
	c.State = e.raft.State().String()
	c.Term = e.raft.CurrentTerm()
	c.CommitIndex = e.raft.CommitIndex()
	c.AppliedIndex = e.raft.AppliedIndex()
	c.LastLogIndex = e.raft.LastIndex()
	f := e.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftErr(err)
	}
	leader := e.leaderID()
	leads := e.raft.State() == raft.Leader
	for _, s := range f.Configuration().Servers {
		entry := e.member(string(s.ID))
		m := api.Member{ID: string(s.ID), Peer: string(s.Address),
			HTTP: entry.HTTP, Etcd: entry.Etcd, Voter: s.Suffrage == raft.Voter, Leader: string(s.ID) == leader}
		switch applied, at := e.x.peerApplied(m.Peer); {
		case !leads:
		case m.ID == e.n.cfg.ID:
			own := c.AppliedIndex
			m.AppliedIndex = &own
		case !at.IsZero():
			// Voters answer the lease rounds, non-voters the probes that go
			// with them (promise.go): both tell how fresh the member is,
			// and how far it has applied.
			d := api.Duration(e.liveNow().Sub(at))
			m.LastContact, m.AppliedIndex = &d, &applied
		}
		c.Members = append(c.Members, m)
	}
	return nil
}

// addMember adds a voter, or a non-voter with m.Voter false (or updates a
// member's addresses), and records its HTTP address in the member table.
// A member already in the configuration at that peer address keeps its
// role: a node that registers again (every start does) neither promotes
// nor demotes itself.
func (e *raftEngine) addMember(ctx context.Context, m api.Member) error {
	present := false
	for _, s := range e.servers() {
		present = present || string(s.ID) == m.ID && string(s.Address) == m.Peer
	}
	if !present {
		if check := e.n.cfg.CheckMember; check != nil {
			if err := check(ctx, m.ID, m.Peer); err != nil {
				return api.Errorf(api.CodeBadRequest, "member %s at %s: %v", m.ID, m.Peer, err)
			}
		}
		add, role := e.raft.AddVoter, "voter"
		if !m.Voter {
			add, role = e.raft.AddNonvoter, "non-voter"
		}
		if err := add(raft.ServerID(m.ID), raft.ServerAddress(m.Peer), 0, e.n.cfg.ApplyTimeout).Error(); err != nil {
			return raftErr(err)
		}
		e.n.log.Info("added "+role, "id", m.ID, "peer", m.Peer)
	}
	res, err := e.n.propose(ctx, fsm.Command{Op: fsm.OpSetMember, Member: &fsm.Member{ID: m.ID, Peer: m.Peer, HTTP: m.HTTP, Etcd: m.Etcd}})
	if err != nil {
		return err
	}
	return e.n.apiErr(res.Err, "", "member")
}

// removeMember removes a node from the configuration and the member table.
// Removing the leader itself makes it step down once committed; a removed
// follower is told that its removal is committed (see removal.go).
func (e *raftEngine) removeMember(ctx context.Context, id string) error {
	addr, voter, voters := "", false, 0
	for _, s := range e.servers() {
		if s.Suffrage == raft.Voter {
			voters++
		}
		if string(s.ID) == id {
			addr, voter = string(s.Address), s.Suffrage == raft.Voter
		}
	}
	switch {
	case addr == "":
		return api.Errorf(api.CodeNotFound, "no member %q in the cluster", id)
	case voter && voters == 1:
		return api.Errorf(api.CodeBadRequest, "%s is the last voter: a cluster without one cannot elect a leader", id)
	}
	if _, err := e.n.propose(ctx, fsm.Command{Op: fsm.OpRemoveMember, Member: &fsm.Member{ID: id}}); err != nil {
		return err
	}
	self := id == e.n.cfg.ID
	if self {
		if t := e.n.currentTerm(); t != nil {
			t.giveUpLease()
		}
	}
	term := e.raft.CurrentTerm()
	f := e.raft.RemoveServer(raft.ServerID(id), 0, e.n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		return raftErr(err)
	}
	e.n.log.Info("removed member", "id", id, "configuration_index", f.Index())
	if !self && e.raft.CurrentTerm() == term {
		go e.tellRemoved(id, addr, f.Index(), term)
	}
	return nil
}
