package lease

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/fsm"
)

// counters are the events the node counts for its metrics. Each is an
// atomic (or a Prometheus counter or histogram, which are atomics too), so
// counting takes no lock.
type counters struct {
	sessionsCreated atomic.Uint64
	sessionsExpired atomic.Uint64
	keepalives      atomic.Uint64
	// delayRefusals counts requests answered lock_delay.
	delayRefusals atomic.Uint64
	// leaseLapses counts the times this leader's master lease ran out
	// while it still led (see leaderTerm.leaseLoop).
	leaseLapses atomic.Uint64
	// guard counts what the guarded transport refused (transport.go).
	guard guardCounts
	// kvCompacted counts watches answered compacted.
	kvCompacted atomic.Uint64
	// kvQuota counts writes answered quota_exceeded.
	kvQuota atomic.Uint64
	// snaps counts Raft's snapshots of the state (fsmadapter.go).
	snaps snapshotStats

	grants             *prometheus.CounterVec
	autopilot          *prometheus.CounterVec // voter-set changes by kind
	grantNow, handoffs prometheus.Counter
	wait, hold         prometheus.Histogram
}

// Bucket bounds, in seconds, of the two histograms: an acquire's wait
// goes from a commit (milliseconds) to the longest wait a request may ask
// for (minutes); a holding from a quick critical section to hours.
var (
	waitBuckets = []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	holdBuckets = []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}
)

// init makes the counters that are Prometheus collectors.
func (c *counters) init() {
	*c = counters{
		grants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockd_lock_grants_total",
			Help: "Locks granted by entries this node proposed as leader: kind=immediate when the acquire found the lock free, kind=handoff when a queued acquire got it as the lock became free.",
		}, []string{"kind"}),
		autopilot: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockd_autopilot_changes_total",
			Help: "Configuration changes this node's voter-set maintenance (--voters) made as leader: kind=promote (a non-voter made voter), demote (a voter made non-voter), remove (a dead voter removed).",
		}, []string{"kind"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockd_lock_acquire_wait_seconds",
			Help:    "Time from an acquire reaching this leader to its grant, for acquires that were granted (refusals are not counted).",
			Buckets: waitBuckets,
		}),
		hold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockd_lock_hold_seconds",
			Help:    "How long a lock was held, from grant to release, session end or expiry, for holdings ended by entries this node proposed as leader.",
			Buckets: holdBuckets,
		}),
	}
	for _, k := range []string{apPromote, apDemote, apRemove} {
		c.autopilot.WithLabelValues(k) // every kind shows, at 0 until it happens
	}
	c.grantNow = c.grants.WithLabelValues("immediate")
	c.handoffs = c.grants.WithLabelValues("handoff")
}

// observe counts what an entry this node proposed did to the locks, and
// logs the locks its holder's expiry handed to a waiter.
func (n *Node) observe(res fsm.Result) {
	a := res.Activity
	if n.count.grants == nil {
		return // a Node not made by New or NewLocal (tests)
	}
	if a.Grants > 0 {
		n.count.grantNow.Add(float64(a.Grants))
	}
	if a.Handoffs > 0 {
		n.count.handoffs.Add(float64(a.Handoffs))
	}
	for _, d := range a.Holds {
		n.count.hold.Observe(d.Seconds())
	}
	if len(a.AfterExpiry) == 0 {
		return
	}
	const few = 5
	n.log.Info("locks handed over after their holder expired", "count", len(a.AfterExpiry),
		"locks", a.AfterExpiry[:min(len(a.AfterExpiry), few)], "index", res.Index)
	for _, name := range a.AfterExpiry {
		n.log.Debug("lock handed over after its holder expired", "lock", name, "index", res.Index)
	}
}

// RegisterMetrics registers the node's metrics on reg. Every value is read
// when it is scraped, from the node's own state (the state machine keeps
// its counts as it changes, so a scrape costs the same whatever the number
// of objects), or counted as events happen: nothing is kept per lock,
// election or session name, so the series stay a fixed few.
func (n *Node) RegisterMetrics(reg prometheus.Registerer) error {
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		newClusterCollector(n),
		newStateCollector(n),
		n.count.grants, n.count.wait, n.count.hold, n.count.autopilot,
		counter("lockd_master_lease_failures_total", "Master-lease renewals that failed to confirm a quorum while this node led.",
			func() float64 { return float64(n.leaseFailures.Load()) }),
		counter("lockd_storage_write_errors_total", "Writes to the data dir (Raft's log and stable store, snapshots) that failed.",
			func() float64 { return float64(n.storage.failures.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockd_storage_full",
			Help: "1 while the last write to the data dir failed for want of space (the node can neither lead nor follow), else 0."},
			func() float64 {
				if n.storage.full() {
					return 1
				}
				return 0
			}),
		counter("lockd_master_lease_suspensions_total", "Times this leader's master lease ran out while it still led: it served nothing until a renewal confirmed a quorum again or its term ended.",
			func() float64 { return float64(n.count.leaseLapses.Load()) }),
		counter("lockd_promise_vote_refusals_total", "Vote and pre-vote requests, sent or received, that this node refused because it had promised its leader not to take part in an election yet (the promise the master lease rests on; see docs/design.md).",
			func() float64 { return float64(n.count.guard.votes.Load()) }),
		counter("lockd_promise_timeout_now_refusals_total", "TimeoutNow requests this node refused: not from the leader it follows, or without that leader's release for the current term.",
			func() float64 { return float64(n.count.guard.timeoutNow.Load()) }),
		counter("lockd_lock_delay_refusals_total", "Acquires and campaigns this node answered lock_delay: the lock or election was in the lock-delay of an expired holder.",
			func() float64 { return float64(n.count.delayRefusals.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockd_blocking_queries", Help: "Blocking queries this node serves now."},
			func() float64 { return float64(n.blocking.Load()) }),
		counter("lockd_sessions_created_total", "Sessions this node created as leader.",
			func() float64 { return float64(n.count.sessionsCreated.Load()) }),
		counter("lockd_sessions_expired_total", "Sessions this node expired as leader.",
			func() float64 { return float64(n.count.sessionsExpired.Load()) }),
		counter("lockd_keepalives_total", "Keepalives this node answered as leader.",
			func() float64 { return float64(n.count.keepalives.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockd_snapshot_in_progress",
			Help: "1 while Raft takes a snapshot of this node's state (from the freeze of the state until the snapshot file is written), else 0."},
			func() float64 { return float64(n.count.snaps.inProgress.Load()) }),
		counter("lockd_snapshots_total", "Snapshots of its state this node's Raft wrote (not the backups of GET /v1/snapshot).",
			func() float64 { return float64(n.count.snaps.persisted.Load()) }),
		counter("lockd_snapshot_seconds_total", "Time the snapshots of lockd_snapshots_total took, from the freeze of the state to the close of the file, summed.",
			func() float64 { return time.Duration(n.count.snaps.nanos.Load()).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockd_snapshot_last_seconds",
			Help: "Time the last snapshot this node's Raft wrote took, from the freeze of the state to the close of the file."},
			func() float64 { return time.Duration(n.count.snaps.lastNanos.Load()).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockd_snapshot_last_bytes",
			Help: "Size of the state in the last snapshot this node's Raft wrote."},
			func() float64 { return float64(n.count.snaps.lastBytes.Load()) }),
		counter("lockd_kv_watch_compacted_total", "Watches of keys this node answered compacted: they asked for events after an index the history no longer reaches.",
			func() float64 { return float64(n.count.kvCompacted.Load()) }),
		counter("lockd_kv_quota_refusals_total", "Writes of keys this node answered quota_exceeded as leader: they would have taken their ACL token past its max_keys or max_bytes.",
			func() float64 { return float64(n.count.kvQuota.Load()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// stateCollector reports the size of the node's state (fsm.Counts and
// fsm.KVCounts), read once per scrape.
type stateCollector struct {
	n                                                      *Node
	sessions, holders, held, waiters, elections, campaigns *prometheus.Desc
	// The namespace of keys (fsm.KVCounts).
	keys, kvBytes, kvEvents, kvCompacted *prometheus.Desc
}

func newStateCollector(n *Node) *stateCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &stateCollector{
		n:         n,
		sessions:  d("lockd_sessions", "Live sessions in the node's state."),
		holders:   d("lockd_lock_holders", "Holders of locks in the node's state (a shared lock counts each of its holders)."),
		held:      d("lockd_locks_held", "Locks with at least one holder in the node's state."),
		waiters:   d("lockd_lock_waiters", "Acquires queued for a lock in the node's state."),
		elections: d("lockd_elections_led", "Elections with a leader in the node's state."),
		campaigns: d("lockd_election_waiters", "Campaigns queued for an election in the node's state."),

		keys:        d("lockd_kv_keys", "Keys in the node's namespace."),
		kvBytes:     d("lockd_kv_bytes", "Bytes of the keys and values in the node's namespace."),
		kvEvents:    d("lockd_kv_history_events", "Events (puts and deletes of keys) the node's history keeps for watches."),
		kvCompacted: d("lockd_kv_history_compacted_index", "The index up to which the history of keys was compacted: a watch must start after it."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sessions, c.holders, c.held, c.waiters, c.elections, c.campaigns, c.keys, c.kvBytes, c.kvEvents, c.kvCompacted} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	k, kv := c.n.fsm.Counts(), c.n.fsm.KVCounts()
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{c.sessions, float64(k.Sessions)}, {c.holders, float64(k.LockHolders)}, {c.held, float64(k.LocksHeld)}, {c.waiters, float64(k.LockWaiters)},
		{c.elections, float64(k.ElectionsLed)}, {c.campaigns, float64(k.ElectionWaiters)},
		{c.keys, float64(kv.Keys)}, {c.kvBytes, float64(kv.Bytes)}, {c.kvEvents, float64(kv.Events)}, {c.kvCompacted, float64(kv.Compacted)}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v)
	}
}

// clusterCollector reports what GET /v1/cluster shows of the node's Raft
// state, reading it once per scrape.
type clusterCollector struct {
	n                                    *Node
	leader, term, commit, applied, lease *prometheus.Desc
}

func newClusterCollector(n *Node) *clusterCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &clusterCollector{
		n:       n,
		leader:  d("lockd_leader", "1 if this node is the leader (Raft) or coordinator (classic modes), else 0."),
		term:    d("lockd_raft_term", "The node's current Raft term (classic modes: its epoch is not shown here)."),
		commit:  d("lockd_raft_commit_index", "The highest log index the node knows to be committed."),
		applied: d("lockd_raft_applied_index", "The highest log index the node has applied."),
		lease:   d("lockd_master_lease_remaining_seconds", "Time left on this leader's master lease; 0 on a follower."),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.term, c.commit, c.applied, c.lease} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	cl, err := c.n.Cluster(context.Background())
	var leader, lease float64
	if err == nil && (cl.State == "Leader" || cl.State == "coordinator") {
		leader = 1
	}
	if err == nil && cl.MasterLeaseRemaining != nil {
		lease = cl.MasterLeaseRemaining.D().Seconds()
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{c.leader, leader}, {c.term, float64(cl.Term)}, {c.commit, float64(cl.CommitIndex)}, {c.applied, float64(cl.AppliedIndex)}, {c.lease, lease}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v)
	}
}

// sinceSeconds is the time since start in seconds, for a histogram.
func sinceSeconds(start time.Time) float64 { return time.Since(start).Seconds() }
