package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/lockd/lockd/fsm"
)

// Node is one lockd node in Raft mode. Create it with New, start it with
// Open, stop it with Close. All methods are safe for concurrent use.
type Node struct {
	cfg   Config
	log   *slog.Logger
	clock Clock
	fsm   *fsm.FSM

	raft   *raft.Raft
	store  *raftboltdb.BoltStore
	stable *stableStore // guards store's stable-store role across Close
	trans  *raft.NetworkTransport

	mu      sync.Mutex
	term    *leaderTerm // non-nil while this node acts as leader
	closing bool
	abort   bool // Abort: no leadership transfer

	stop chan struct{}  // closed by Close
	wg   sync.WaitGroup // background goroutines
}

// New checks cfg and returns a Node. It does no I/O.
func New(cfg Config) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Stream == nil {
		return nil, errors.New("lease: config: Stream is required")
	}
	n := &Node{
		cfg:   cfg,
		log:   cfg.Logger.With("component", "lease", "node", cfg.ID),
		clock: cfg.Clock,
		fsm:   fsm.New(),
		stop:  make(chan struct{}),
	}
	n.fsm.SetUnsafeGrantHeld(cfg.Unsafe.GrantHeld)
	if cfg.Unsafe != (Unsafe{}) {
		n.log.Warn("UNSAFE test switches are on; this node breaks lockd's guarantees on purpose",
			"unsafe", fmt.Sprintf("%+v", cfg.Unsafe))
	}
	return n, nil
}

// Open waits one HeartbeatTimeout (see the package doc), opens the stores
// under DataDir, starts Raft, and bootstraps a new cluster if the node has
// no state and is not joining. It returns once Raft runs; it does not wait
// for a leader.
func (n *Node) Open() error {
	if err := os.MkdirAll(n.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("lease: data dir: %w", err)
	}
	if !n.cfg.NoBootWait {
		// A follower that restarts has forgotten that it heard from a leader;
		// waiting out one HeartbeatTimeout keeps the promise it made.
		time.Sleep(n.cfg.HeartbeatTimeout)
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(n.cfg.DataDir, "raft.db"),
		BoltOptions: &bolt.Options{Timeout: 2 * time.Second},
	})
	if err != nil {
		return fmt.Errorf("lease: open %s: %w (is another lockd using this data dir?)", filepath.Join(n.cfg.DataDir, "raft.db"), err)
	}
	n.store = store
	n.stable = &stableStore{s: store}
	hl := newRaftLogger(n.cfg.Logger, n.cfg.RaftLogLevel)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.DataDir, 2, hl)
	if err != nil {
		store.Close()
		return fmt.Errorf("lease: snapshot store: %w", err)
	}
	logs, err := raft.NewLogCache(1024, store)
	if err != nil {
		store.Close()
		return err
	}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  n.cfg.Stream,
		MaxPool: 3,
		Timeout: 5 * time.Second,
		Logger:  hl,
	})
	rc := n.raftConfig(hl)
	existing, err := raft.HasExistingState(logs, n.stable, snaps)
	if err != nil {
		store.Close()
		return fmt.Errorf("lease: read state: %w", err)
	}
	r, err := raft.NewRaft(rc, raftFSM{n.fsm}, logs, n.stable, snaps, n.trans)
	if err != nil {
		store.Close()
		return fmt.Errorf("lease: start raft: %w", err)
	}
	n.raft = r
	if !existing && n.cfg.Join == "" {
		if err := r.BootstrapCluster(n.bootstrapConfiguration()).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.Close()
			return fmt.Errorf("lease: bootstrap: %w", err)
		}
		n.log.Info("bootstrapped cluster", "voters", len(n.bootstrapConfiguration().Servers))
	}
	n.wg.Add(1)
	go n.watchLeadership()
	return nil
}

func (n *Node) raftConfig(hl interface{}) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.ID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.BatchApplyCh = true
	rc.Logger = newRaftLogger(n.cfg.Logger, n.cfg.RaftLogLevel)
	return rc
}

func (n *Node) bootstrapConfiguration() raft.Configuration {
	peers := n.cfg.InitialCluster
	if len(peers) == 0 {
		peers = []Peer{{ID: n.cfg.ID, Addr: n.cfg.PeerAddr}}
	}
	var c raft.Configuration
	for _, p := range peers {
		c.Servers = append(c.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr),
		})
	}
	return c
}

// Close stops the node. A leader first gives up its master lease and
// transfers leadership, so that the cluster does not wait out an election
// timeout. Close is safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closing {
		n.mu.Unlock()
		return nil
	}
	n.closing = true
	term := n.term
	abort := n.abort
	n.mu.Unlock()
	if !abort && n.raft != nil && term != nil && n.raft.State() == raft.Leader && n.hasPeers() {
		term.giveUpLease()
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer failed", "err", err)
		} else {
			n.log.Info("transferred leadership")
		}
	}
	close(n.stop)
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
	}
	n.wg.Wait()
	n.endTerm()
	if n.trans != nil {
		n.trans.Close()
	}
	if n.store != nil {
		n.stable.close()
		if cerr := n.store.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Abort stops the node the way a crash would as far as the cluster can tell:
// no leadership transfer, so the others elect a leader after their timeouts.
// It exists for tests.
func (n *Node) Abort() error {
	n.mu.Lock()
	n.abort = true
	n.mu.Unlock()
	return n.Close()
}

func (n *Node) hasPeers() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return len(f.Configuration().Servers) > 1
}

// watchLeadership starts a leader term when Raft makes this node leader and
// ends it when Raft takes leadership away. It polls as well as listening to
// LeaderCh, because LeaderCh may coalesce a lose-and-regain into nothing.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.HeartbeatTimeout / 10)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-n.raft.LeaderCh():
		case <-tick.C:
		}
		n.syncLeadership()
	}
}

func (n *Node) syncLeadership() {
	leader := n.raft.State() == raft.Leader
	raftTerm := n.raft.CurrentTerm()
	n.mu.Lock()
	cur := n.term
	n.mu.Unlock()
	if cur != nil && (!leader || cur.raftTerm != raftTerm || cur.ended()) {
		n.endTerm()
		cur = nil
	}
	if leader && cur == nil {
		n.startTerm(raftTerm)
	}
}

func (n *Node) startTerm(raftTerm uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closing || n.term != nil {
		return
	}
	n.term = newLeaderTerm(n, raftTerm)
	n.log.Info("became raft leader; establishing master lease", "term", raftTerm)
	n.term.start()
}

func (n *Node) endTerm() {
	n.mu.Lock()
	t := n.term
	n.term = nil
	n.mu.Unlock()
	if t != nil {
		t.stop()
		n.log.Info("leader term ended", "term", t.raftTerm)
	}
}

// currentTerm returns the leader term if this node leads and has finished
// establishing itself (barrier applied, lease taken, sessions given grace).
func (n *Node) currentTerm() *leaderTerm {
	n.mu.Lock()
	t := n.term
	n.mu.Unlock()
	if t == nil || !t.isReady() {
		return nil
	}
	return t
}

// FSM returns the node's state machine, for reads that need no leader.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Raft returns the underlying Raft instance, for tests and diagnostics.
func (n *Node) Raft() *raft.Raft { return n.raft }

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// waitCtx returns ctx cancelled also when the node stops.
func (n *Node) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
