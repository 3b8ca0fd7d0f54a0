package lease

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the events the node counts for its metrics.
type counters struct {
	sessionsCreated atomic.Uint64
	sessionsExpired atomic.Uint64
	keepalives      atomic.Uint64
}

// RegisterMetrics registers the node's metrics on reg. Every value is read
// when it is scraped, from the node's own state: nothing is kept per lock,
// election or session name, so the series stay a fixed few whatever the
// number of objects.
func (n *Node) RegisterMetrics(reg prometheus.Registerer) error {
	cluster := func() (leader, term, commit, applied, lease float64) {
		c, err := n.Cluster(context.Background())
		if err != nil {
			return 0, 0, 0, 0, 0
		}
		if c.State == "Leader" || c.State == "coordinator" {
			leader = 1
		}
		if c.MasterLeaseRemaining != nil {
			lease = c.MasterLeaseRemaining.D().Seconds()
		}
		return leader, float64(c.Term), float64(c.CommitIndex), float64(c.AppliedIndex), lease
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		gauge("lockd_leader", "1 if this node is the leader (Raft) or coordinator (classic modes), else 0.",
			func() float64 { l, _, _, _, _ := cluster(); return l }),
		gauge("lockd_raft_term", "The node's current Raft term (classic modes: its epoch is not shown here).",
			func() float64 { _, t, _, _, _ := cluster(); return t }),
		gauge("lockd_raft_commit_index", "The highest log index the node knows to be committed.",
			func() float64 { _, _, c, _, _ := cluster(); return c }),
		gauge("lockd_raft_applied_index", "The highest log index the node has applied.",
			func() float64 { _, _, _, a, _ := cluster(); return a }),
		gauge("lockd_master_lease_remaining_seconds", "Time left on this leader's master lease; 0 on a follower.",
			func() float64 { _, _, _, _, l := cluster(); return l }),
		counter("lockd_master_lease_failures_total", "Master-lease renewals that failed to confirm a quorum while this node led.",
			func() float64 { return float64(n.leaseFailures.Load()) }),
		gauge("lockd_sessions", "Live sessions in the node's state.",
			func() float64 { return float64(n.fsm.SessionCount()) }),
		gauge("lockd_blocking_queries", "Blocking queries this node serves now.",
			func() float64 { return float64(n.blocking.Load()) }),
		counter("lockd_sessions_created_total", "Sessions this node created as leader.",
			func() float64 { return float64(n.count.sessionsCreated.Load()) }),
		counter("lockd_sessions_expired_total", "Sessions this node expired as leader.",
			func() float64 { return float64(n.count.sessionsExpired.Load()) }),
		counter("lockd_keepalives_total", "Keepalives this node answered as leader.",
			func() float64 { return float64(n.count.keepalives.Load()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
