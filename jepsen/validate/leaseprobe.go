package validate

import (
	"fmt"
	"time"
)

// LeaseProbe is a default read that the harness sent to one node with the
// forwarded-request header (X-Lockd-Forwarded) and that the node answered
// with 200: a node that is not the leader answers such a request 503
// instead of forwarding it, and a leader answers a default read only under
// its master lease, so the node itself served it under a lease at some
// moment between Sent and Answered. Both are nanoseconds of the host's
// CLOCK_MONOTONIC, the clock of the lease logs (LeaseLine).
type LeaseProbe struct {
	Node           string
	Sent, Answered int64
}

// probeSlack absorbs the conversion of the nodes' Go time readings to
// CLOCK_MONOTONIC in their lease logs (lease/leaselog.go reads both
// clocks once, microseconds apart): a probe is outside the logs only if
// it is outside by more than this.
const probeSlack = int64(time.Millisecond)

// CheckLeaseProbes adds to v, the master-lease verdict on lines, the
// verdict of an outside witness: every probe that a node answered under a
// lease must fall in (overlap) one of the intervals in which that node's
// own lease log says it may serve. A node that serves without writing a
// line is invisible to the logs alone; to the probes it is a violation.
// v's details get how many probes were answered and checked.
func CheckLeaseProbes(v Verdict, lines []LeaseLine, probes []LeaseProbe) Verdict {
	byNode := map[string][]leaseInterval{}
	for _, iv := range servingIntervals(lines) {
		byNode[iv.node] = append(byNode[iv.node], iv)
	}
	outside := 0
	for _, p := range probes {
		if covered(byNode[p.Node], p) {
			continue
		}
		outside++
		v.addf("%s answered a lease read probe sent at %d, answered at %d (ns of CLOCK_MONOTONIC), outside every interval its lease log shows",
			p.Node, p.Sent, p.Answered)
	}
	nodes := map[string]bool{}
	for _, p := range probes {
		nodes[p.Node] = true
	}
	v.Details = append(v.Details, fmt.Sprintf("outside witness: %d lease read probes answered by %d nodes (with the forwarded-request header, so each by the node itself), %d outside the lease logs",
		len(probes), len(nodes), outside))
	return v
}

// covered reports whether p overlaps one of ivs (sorted by start), with
// probeSlack.
func covered(ivs []leaseInterval, p LeaseProbe) bool {
	for _, iv := range ivs {
		if iv.start-probeSlack <= p.Answered && p.Sent <= iv.end+probeSlack {
			return true
		}
	}
	return false
}
