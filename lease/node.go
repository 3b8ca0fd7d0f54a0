package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// Node is one lockd node: in Raft mode (New) a replica of the cluster's
// state, in a classic mode (NewLocal) a node whose coordinator serves from
// its own unreplicated state. Create it with New or NewLocal, start it with
// Open, stop it with Close. All methods are safe for concurrent use.
type Node struct {
	cfg   Config
	log   *slog.Logger
	clock Clock
	fsm   *fsm.FSM
	eng   engine
	raft  *raftEngine // the engine in Raft mode, else nil
	// leaseLog records the master lease (Config.LeaseLog); nil if not set.
	leaseLog *leaseLog

	mu      sync.Mutex
	term    *leaderTerm // non-nil while this node acts as leader
	closing bool
	abort   bool // Abort: no leadership transfer

	stop chan struct{}  // closed by Close
	wg   sync.WaitGroup // background goroutines

	blocking atomic.Int64 // blocking queries being served (Config.MaxBlockingQueries)
	// leaseFailures counts the master-lease rounds that failed to confirm
	// a quorum while this node led, since it started.
	leaseFailures atomic.Uint64
	count         counters // for the metrics (metrics.go)
	// storage watches the writes to the data dir (storage.go).
	storage *storageWatch

	unsafe unsafeState // the state of the unsafe switches that need one (none without the lockd_unsafe tag)

	// followed is the leader this node last logged it follows; only the
	// leadership watch uses it.
	followed string
}

// New checks cfg and returns a Raft-mode Node. It does no I/O.
func New(cfg Config) (*Node, error) {
	n, err := newNode(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Stream == nil || cfg.LeaseLayer == nil {
		return nil, errors.New("lease: config: Stream and LeaseLayer are required")
	}
	n.raft = newRaftEngine(n)
	n.eng = n.raft
	return n, nil
}

func newNode(cfg Config) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:   cfg,
		log:   cfg.Logger.With("component", "lease", "node", cfg.ID),
		clock: cfg.Clock,
		fsm:   fsm.New(),
		stop:  make(chan struct{}),
	}
	if cfg.KVHistory != (fsm.HistoryLimits{}) {
		// The zero limits (a Config not made by DefaultConfig) keep the
		// FSM's own defaults.
		if err := n.fsm.SetHistoryLimits(cfg.KVHistory); err != nil {
			return nil, err
		}
	}
	n.storage = &storageWatch{log: n.log}
	n.count.init()
	n.unsafeSetUp()
	if c, ok := cfg.Clock.(interface{ OnChange(func()) }); ok {
		c.OnChange(n.clockChanged)
	}
	return n, nil
}

// Open starts the engine (in Raft mode: the boot wait, the stores, Raft
// itself, and a bootstrap if the node is new) and the leadership watch. It
// returns once the engine runs; it does not wait for a leader.
func (n *Node) Open() error {
	if n.cfg.LeaseLog != "" {
		l, err := openLeaseLog(n.cfg.LeaseLog, n.cfg.ID)
		if err != nil {
			return err
		}
		n.leaseLog = l
	}
	if err := n.eng.open(); err != nil {
		n.leaseLog.close()
		return err
	}
	n.wg.Add(1)
	go n.watchLeadership()
	return nil
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
	term, abort := n.term, n.abort
	n.mu.Unlock()
	if !abort && term != nil {
		term.giveUpLease()
		n.log.Info("master lease given up to hand leadership over", "term", term.raftTerm)
		if err := n.eng.transfer(); err != nil {
			n.log.Warn("leadership transfer failed", "err", err)
		}
	}
	close(n.stop)
	n.wg.Wait()
	n.endTerm()
	err := n.eng.close()
	n.leaseLog.close()
	return err
}

// leadershipLost is called as Raft leaves the leader state: the node
// stops serving under its lease at once (leaseValid asks Raft at every
// use), so the lease log says so at once, unless the unsafe switch
// DeposedServing keeps it serving.
func (n *Node) leadershipLost() {
	if n.unsafeDeposedServing() {
		return
	}
	n.mu.Lock()
	t := n.term
	n.mu.Unlock()
	if t != nil {
		t.logStop()
	}
}

// clockChanged is called after the node's clock (a SkewClock) changed
// offset or rate: Raft's timers follow the new rate, and the lease log
// converts the lease's end again.
func (n *Node) clockChanged() {
	if n.raft != nil {
		n.raft.clockChanged()
	}
	n.mu.Lock()
	t := n.term
	n.mu.Unlock()
	if t != nil {
		t.clockChanged()
	}
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

// isClosing reports whether Close has begun.
func (n *Node) isClosing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closing
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
		case <-n.eng.leaderCh():
		case <-tick.C:
		}
		n.syncLeadership()
	}
}

func (n *Node) syncLeadership() {
	leader, raftTerm := n.eng.state()
	if n.raft != nil {
		// A follower logs each new leader once; a classic elector logs
		// its own view.
		if id := n.eng.leaderID(); id != "" && id != n.followed {
			n.followed = id
			if id != n.cfg.ID {
				n.log.Info("following a new leader", "leader", id, "term", raftTerm)
			}
		}
	}
	n.mu.Lock()
	cur := n.term
	n.mu.Unlock()
	if cur != nil && (!leader || cur.raftTerm != raftTerm || cur.ended()) {
		if n.unsafeKeepsServing(cur) {
			return // serves on for a while, as a leader that missed its deposition
		}
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
	if n.raft != nil {
		n.log.Info("became leader; establishing master lease", "term", raftTerm)
	} else {
		// The classic elector logged the election already.
		n.log.Debug("became coordinator; establishing master lease", "epoch", raftTerm)
	}
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
// termOf returns the node's leader term for Raft term raftTerm, ready or
// not, or nil.
func (n *Node) termOf(raftTerm uint64) *leaderTerm {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.term == nil || n.term.raftTerm != raftTerm {
		return nil
	}
	return n.term
}

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

// Raft returns the underlying Raft instance in Raft mode, nil otherwise,
// for membership bookkeeping, tests and diagnostics.
func (n *Node) Raft() *raft.Raft {
	if n.raft == nil {
		return nil
	}
	return n.raft.raft
}

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
