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
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		newClusterCollector(n),
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
