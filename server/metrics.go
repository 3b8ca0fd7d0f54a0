package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/classic"
)

// classicCollector reports a classic elector's accounting (classic.Stats,
// also in GET /v1/cluster), read once per scrape. Messages are counted by
// kind, and only the kinds the node's algorithm sends appear: a few series
// whatever the cluster does.
type classicCollector struct {
	el                                   *classic.Node
	kinds                                []classic.Kind
	started, sent, recv, lost, suppressd *prometheus.Desc
	inElection, last, epoch              *prometheus.Desc
}

func newClassicCollector(el *classic.Node, alg classic.Algorithm) *classicCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &classicCollector{
		el:         el,
		kinds:      alg.Kinds(),
		started:    d("lockd_classic_elections_started_total", "Elections this node started or started again (ring initiations, bully elections and restarts, invitation merges and recoveries)."),
		sent:       d("lockd_classic_messages_sent_total", "Election messages this node sent, by kind (heartbeats included, as kind heartbeat).", "kind"),
		recv:       d("lockd_classic_messages_received_total", "Election messages this node received, by kind.", "kind"),
		lost:       d("lockd_classic_messages_lost_total", "Messages this node sent that the network reported it could not deliver."),
		suppressd:  d("lockd_classic_messages_suppressed_total", "Messages the algorithm dropped on purpose (duplicates, challenges from lower ids, invitations out of turn)."),
		inElection: d("lockd_classic_in_election", "1 while this node takes part in an election, else 0."),
		last:       d("lockd_classic_last_election_seconds", "How long this node's most recent election took, from its start until the node learned the outcome."),
		epoch:      d("lockd_classic_epoch", "The epoch (invitation: group number) of the coordinator this node believes in."),
	}
}

func (c *classicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.started, c.sent, c.recv, c.lost, c.suppressd, c.inElection, c.last, c.epoch} {
		ch <- d
	}
}

func (c *classicCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.el.Stats()
	m := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	m(c.started, prometheus.CounterValue, float64(st.ElectionsStarted))
	for _, k := range c.kinds {
		m(c.sent, prometheus.CounterValue, float64(st.Sent[k]), k.String())
		m(c.recv, prometheus.CounterValue, float64(st.Received[k]), k.String())
	}
	m(c.lost, prometheus.CounterValue, float64(st.Lost))
	m(c.suppressd, prometheus.CounterValue, float64(st.Suppressed))
	in := 0.0
	if st.InElection {
		in = 1
	}
	m(c.inElection, prometheus.GaugeValue, in)
	m(c.last, prometheus.GaugeValue, st.LastElection.Seconds())
	m(c.epoch, prometheus.GaugeValue, float64(st.Epoch))
}
