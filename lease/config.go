package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// The Raft log stores a node can keep its log in (Config.LogStore).
const (
	LogStoreAuto = "auto"
	LogStoreWAL  = "wal"
	LogStoreBolt = "boltdb"
)

// Peer is one member of a static initial cluster.
type Peer struct {
	ID   string
	Addr string // peer (Raft) address, host:port
}

// Config configures a Node. Start from DefaultConfig and fill in at least
// ID, DataDir, PeerAddr, HTTPAddr and Stream.
type Config struct {
	// ID is this node's unique, stable name ("n1").
	ID string
	// DataDir holds the Raft log and stable store (raft.db, or wal/ with
	// LogStore "wal") and snapshots/.
	DataDir string
	// LogStore names the Raft log and stable store: "wal"
	// (hashicorp/raft-wal: segment files, one fsync per append), "boltdb"
	// (raft-boltdb: one bbolt file, two fsyncs per append, the only store
	// of lockd before wal), or "auto" (the default): the one the data dir
	// already holds, and wal for a new data dir. A data dir keeps the
	// store it was created with; a node refuses to start with the other.
	LogStore string
	// PeerAddr is the address other nodes reach this node's peer port at.
	PeerAddr string
	// HTTPAddr is the URL other nodes forward API requests to
	// ("http://127.0.0.1:7400"). It is written to the member table.
	HTTPAddr string
	// EtcdAddr is the URL of this node's etcd API (http:// or https://),
	// "" when it serves none: recorded in the member table for etcd's
	// MemberList.
	EtcdAddr string
	// Stream carries Raft's connections (internal/mux's Raft layer).
	Stream raft.StreamLayer
	// LeaseLayer carries the lease exchange (internal/mux's lease layer):
	// the leader's questions to followers about their promises, and their
	// answers. Required in Raft mode.
	LeaseLayer Layer

	// InitialCluster, if not empty, lists every voter of a new cluster; a
	// node with no Raft state bootstraps with it. Empty and Join empty: the
	// node bootstraps a single-node cluster of itself. Ignored when the
	// node has state already.
	InitialCluster []Peer
	// Join, if set, means the node does not bootstrap: it waits to be added
	// by the leader (server asks the member at this address to add it).
	Join string
	// NonVoter makes a joining node ask to be added as a non-voter: it
	// replicates the log and serves ?stale reads, forwards everything
	// else to the leader, and never votes nor counts toward a commit or
	// the master lease. The voter-set maintenance (Voters) may promote it.
	NonVoter bool
	// Voters, if not 0, is the number of voters the leader keeps in the
	// configuration (autopilot.go): it promotes a healthy, caught-up
	// non-voter in place of a voter unreachable for DeadVoterAfter (and
	// then removes the dead voter), promotes when there are fewer voters,
	// and demotes when there are more. 0 (the default) leaves the voter set
	// to the operator. Odd, at most 9.
	Voters int
	// DeadVoterAfter is how long a voter must have been unreachable from
	// the leader (no answer in the lease exchange), without a break, before
	// the leader replaces it; also how long a promoted member stays a
	// voter before it may be demoted, and how long a non-voter must have
	// been healthy before it is promoted. Default 10s.
	DeadVoterAfter time.Duration
	// CheckMember, if set, is asked by the leader before it adds a voter
	// that is not in the configuration at that peer address yet: an error
	// refuses the addition (bad_request, with the error's text). With
	// mutual TLS on the peer port, server checks that the node at peer
	// holds a certificate of the cluster's CA naming id, so that a process
	// without one cannot be made a voter.
	CheckMember func(ctx context.Context, id, peer string) error

	// HeartbeatTimeout is Raft's follower timeout, and so the length of a
	// follower's promise not to vote for another leader: the master lease
	// lasts at most HeartbeatTimeout x (1 - MaxClockDrift) - LeaseMargin
	// from the moment the leader asked a quorum for their promises (each
	// follower reports what is left of its own promise, so nodes with
	// different values stay safe). It is also the boot wait. Shorter means
	// faster failover and more heartbeat traffic. Default 500ms (a LAN).
	HeartbeatTimeout time.Duration
	// ElectionTimeout is Raft's candidate timeout. Default 500ms.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a Raft leader keeps leading without
	// hearing from a quorum before it steps down. Must not exceed
	// HeartbeatTimeout. Default 250ms.
	LeaderLeaseTimeout time.Duration
	// MaxClockDrift is the largest relative difference in clock rate between
	// any two nodes (and between a node and its clients) that reads under
	// the master lease tolerate. Default 0.01 (1%).
	MaxClockDrift float64
	// LeaseMargin is subtracted from the master lease to absorb scheduling
	// delays between measuring time and acting on it. Default 50ms.
	LeaseMargin time.Duration
	// ApplyTimeout bounds how long a write waits for its commit before it
	// is answered with a timeout (outcome unknown). Default 10s.
	ApplyTimeout time.Duration
	// ParallelAppend makes the Raft leader send new entries to its
	// followers while it writes them to its own log, instead of after
	// (hashicorp/raft's Config.ParallelLeaderAppend, lockd's patch in
	// third_party/raft): one request waits for the slower of the leader's
	// fsync and a follower's round trip with its fsync, not their sum. The
	// leader counts itself toward a commit, and applies an entry, only once
	// its own write returned (docs/design.md, "Parallel leader append").
	// Every node of a cluster may choose alone. On in DefaultConfig since
	// a fault campaign with it on was clean (jepsen/RESULTS.md, 0e8b5e0).
	ParallelAppend bool
	// NotifyCommit makes the Raft leader send its followers each new
	// commit index at once, as an empty AppendEntries when no entry is
	// waiting to go with it (hashicorp/raft's
	// Config.NotifyFollowersOfCommit, lockd's patch in third_party/raft),
	// instead of letting them learn it with the next entries or after
	// hashicorp/raft's CommitTimeout (50ms) when none come. Followers then
	// apply a write, and answer the stale reads, blocking queries and
	// watches they serve, a round trip after it commits. Safety is
	// unaffected (a leader may send its commit index at any time). On in
	// DefaultConfig.
	NotifyCommit bool
	// SnapshotThreshold is how many log entries trigger a snapshot. Default 8192.
	SnapshotThreshold uint64
	// SnapshotInterval is how often Raft checks whether to snapshot. Default 30s.
	SnapshotInterval time.Duration
	// MaxBlockingQueries bounds the blocking queries (reads with a wait)
	// the node serves at once; one more is answered too_many_requests
	// (429) with a Retry-After, and nothing waits for it. Each costs a
	// goroutine and a connection while it waits, and nothing else until
	// what it watches changes. Default 10000.
	MaxBlockingQueries int
	// Limits checked by the leader before it appends a request (limits.go),
	// each answered too_many_requests (429) past the limit: sessions per
	// ACL token (default 100000), locks and elections a session holds or
	// waits for (default 10000), and sessions waiting on one lock or
	// election (default 100000). They are checked against the state the
	// leader has applied, so requests in flight together may pass a limit
	// by their number.
	MaxSessionsPerToken  int
	MaxObjectsPerSession int
	MaxWaitersPerObject  int
	// KVHistory bounds the history of the namespace that watches read
	// (fsm.HistoryLimits): at least the last MinEvents events and those
	// younger than MinAge, never more than MaxEvents. Every node of a
	// cluster must use the same, or their histories differ (never their
	// keys). Default fsm.DefaultHistoryLimits: 10000 events, 5 minutes,
	// 1000000 events.
	KVHistory fsm.HistoryLimits
	// NoBootWait skips the wait of one HeartbeatTimeout before Raft starts.
	// It exists for tests of fresh in-memory clusters and for the fault
	// harness's self-test; it is unsafe for a node that restarts.
	NoBootWait bool
	// LeaseLog, if set, is a file the node appends a line to at every
	// change of its master lease, with the lease's end in the host's
	// CLOCK_MONOTONIC (see leaseLog). It is an aid for the fault harness,
	// which checks that no two nodes' leases overlap; it costs a write per
	// lease round.
	LeaseLog string
	// ACLBootstrapSecret, if set, is the secret of the first admin ACL
	// token: the first leader that finds no bootstrap token in the state
	// creates it (once in the cluster's life; see fsm.OpBootstrapACL).
	ACLBootstrapSecret string
	// unsafeConfig holds, in a build with the lockd_unsafe tag only, the
	// field Unsafe: switches that break guarantees on purpose, for the
	// fault harness's self-test (unsafe_on.go). A default build has no
	// such field (unsafe_off.go).
	unsafeConfig

	// Clock is the node's time source. Default SystemClock.
	Clock Clock
	// Logger receives the node's logs (component=lease) and raft's
	// (component=raft). Default slog.Default().
	Logger *slog.Logger
	// RaftLogLevel is the level raft's own logs are kept at. Default Warn.
	RaftLogLevel slog.Level
}

// DefaultConfig returns a Config with the LAN defaults described on each field.
func DefaultConfig() Config {
	return Config{
		ParallelAppend:       true,
		NotifyCommit:         true,
		HeartbeatTimeout:     500 * time.Millisecond,
		ElectionTimeout:      500 * time.Millisecond,
		LeaderLeaseTimeout:   250 * time.Millisecond,
		MaxClockDrift:        0.01,
		LeaseMargin:          50 * time.Millisecond,
		ApplyTimeout:         10 * time.Second,
		SnapshotThreshold:    8192,
		SnapshotInterval:     30 * time.Second,
		LogStore:             LogStoreAuto,
		MaxBlockingQueries:   10000,
		MaxSessionsPerToken:  100000,
		MaxObjectsPerSession: 10000,
		MaxWaitersPerObject:  100000,
		DeadVoterAfter:       10 * time.Second,
		KVHistory:            fsm.DefaultHistoryLimits(),
		Clock:                SystemClock{},
		RaftLogLevel:         slog.LevelWarn,
	}
}

// Validate reports the first field that is missing or out of bounds. It
// does not require Stream, so that flags can be checked before any
// listener exists; New does.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("lease: config: ID is required")
	case c.DataDir == "":
		return errors.New("lease: config: DataDir is required")
	case c.PeerAddr == "":
		return errors.New("lease: config: PeerAddr is required")
	case c.LogStore != "" && c.LogStore != LogStoreAuto && c.LogStore != LogStoreBolt && c.LogStore != LogStoreWAL:
		return fmt.Errorf("lease: config: LogStore %q is none of %q, %q, %q", c.LogStore, LogStoreAuto, LogStoreWAL, LogStoreBolt)
	case c.HeartbeatTimeout < 10*time.Millisecond:
		return fmt.Errorf("lease: config: HeartbeatTimeout %v is below 10ms", c.HeartbeatTimeout)
	case c.ElectionTimeout < c.HeartbeatTimeout:
		return fmt.Errorf("lease: config: ElectionTimeout %v is below HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	case c.LeaderLeaseTimeout <= 0 || c.LeaderLeaseTimeout > c.HeartbeatTimeout:
		return fmt.Errorf("lease: config: LeaderLeaseTimeout %v must be in (0, HeartbeatTimeout]", c.LeaderLeaseTimeout)
	case c.MaxClockDrift < 0 || c.MaxClockDrift >= 0.5:
		return fmt.Errorf("lease: config: MaxClockDrift %v must be in [0, 0.5)", c.MaxClockDrift)
	case c.leaseDuration() <= 0:
		return fmt.Errorf("lease: config: LeaseMargin %v leaves no master lease of HeartbeatTimeout %v", c.LeaseMargin, c.HeartbeatTimeout)
	case c.ApplyTimeout <= 0:
		return errors.New("lease: config: ApplyTimeout must be positive")
	case c.MaxBlockingQueries < 1:
		return fmt.Errorf("lease: config: MaxBlockingQueries %d must be at least 1", c.MaxBlockingQueries)
	case c.MaxSessionsPerToken < 1 || c.MaxObjectsPerSession < 1 || c.MaxWaitersPerObject < 1:
		return fmt.Errorf("lease: config: MaxSessionsPerToken %d, MaxObjectsPerSession %d and MaxWaitersPerObject %d must be at least 1",
			c.MaxSessionsPerToken, c.MaxObjectsPerSession, c.MaxWaitersPerObject)
	case c.KVHistory != (fsm.HistoryLimits{}) && (c.KVHistory.MinEvents < 0 || c.KVHistory.MinAge < 0 || c.KVHistory.MaxEvents < 1 || c.KVHistory.MinEvents > c.KVHistory.MaxEvents):
		return fmt.Errorf("lease: config: KVHistory: MinEvents %d and MinAge %v must not be negative, and MaxEvents %d must be at least 1 and MinEvents",
			c.KVHistory.MinEvents, c.KVHistory.MinAge, c.KVHistory.MaxEvents)
	case len(c.InitialCluster) > 0 && c.Join != "":
		return errors.New("lease: config: InitialCluster and Join are exclusive")
	case c.NonVoter && c.Join == "":
		return errors.New("lease: config: NonVoter needs Join: a node that bootstraps a cluster is its voter")
	case c.Voters < 0 || c.Voters > 9 || c.Voters != 0 && c.Voters%2 == 0:
		return fmt.Errorf("lease: config: Voters %d must be 0 (off) or odd, at most 9", c.Voters)
	case c.Voters > 0 && c.DeadVoterAfter < 2*c.HeartbeatTimeout:
		return fmt.Errorf("lease: config: DeadVoterAfter %v must be at least twice HeartbeatTimeout %v", c.DeadVoterAfter, c.HeartbeatTimeout)
	}
	if len(c.InitialCluster) > 0 {
		seen := map[string]bool{}
		self := false
		for _, p := range c.InitialCluster {
			if p.ID == "" || p.Addr == "" {
				return fmt.Errorf("lease: config: initial cluster member %q has no id or address", p.ID+"="+p.Addr)
			}
			if seen[p.ID] {
				return fmt.Errorf("lease: config: initial cluster names %q twice", p.ID)
			}
			seen[p.ID] = true
			self = self || p.ID == c.ID
		}
		if !self {
			return fmt.Errorf("lease: config: initial cluster does not include this node %q", c.ID)
		}
	}
	return nil
}

// leaseFor is how long a master lease runs from the start of the round
// that confirmed it, when promise is the smallest promise of the quorum
// behind it: promise shrunk by the clock-drift bound, minus the margin.
// The promise is measured on the follower's clock and the lease on the
// leader's, which may run up to MaxClockDrift faster.
func (c *Config) leaseFor(promise time.Duration) time.Duration {
	return time.Duration(float64(promise)*(1-c.MaxClockDrift)) - c.LeaseMargin
}

// leaseDuration is the longest master lease one confirmation can give:
// what it gives when every promise in the quorum is whole.
func (c *Config) leaseDuration() time.Duration {
	return c.leaseFor(c.HeartbeatTimeout)
}

// renewInterval is how often the leader renews its master lease.
func (c *Config) renewInterval() time.Duration {
	return c.HeartbeatTimeout / 5
}
