package lease

import (
	"time"

	"github.com/hashicorp/raft"
)

// promise is a follower's answer to the lease exchange: how much longer,
// by this node's clock, it is bound not to vote for anyone but leader, or 0
// if it does not follow leader in term.
//
// A hashicorp/raft follower that knows a leader rejects every vote and
// pre-vote request from another candidate (outside a leadership transfer),
// and clears the leader only when its heartbeat timer finds the last
// contact HeartbeatTimeout old or older. Last contact only moves forward.
// So once this node has read a last contact c and then seen leader in term
// as its leader, it votes for nobody else before c + HeartbeatTimeout. The
// reads are in that order on purpose: c first, then leader, term and
// state, then the time, so that a leader cleared and set again between the
// reads shows as an expired promise, never as a fresh one.
func (e *raftEngine) promise(term uint64, leader string) time.Duration {
	r := e.raft
	last := r.LastContact()
	_, id := r.LeaderWithID()
	if string(id) != leader || r.State() != raft.Follower || r.CurrentTerm() != term || last.IsZero() {
		return 0
	}
	// Raft's own timers run on the system clock, so the promise is measured
	// on it too, with the heartbeat timeout Raft is using now, and then
	// told as this node's clock would tell it: a clock at rate r (which
	// also divides Raft's timeouts by r, see clockChanged) sees r times
	// the real time that is left.
	left := r.ReloadableConfig().HeartbeatTimeout - time.Since(last)
	return time.Duration(clockRate(e.n.clock) * float64(left))
}

// lease confirms through the lease exchange that a quorum of the voters
// follows this node in term, and returns the end of the master lease:
// start plus the smallest remaining promise among that quorum, shrunk by
// the clock-drift bound, minus the margin. This node's own vote counts
// (a leader votes for nobody else in its term). See the package doc.
func (e *raftEngine) lease(term uint64, start time.Time) (time.Time, error) {
	cfg := e.n.cfg
	if cfg.Unsafe.RoundLease {
		return e.roundLease(start)
	}
	if e.raft.State() != raft.Leader || e.raft.CurrentTerm() != term {
		return time.Time{}, errNoLeader("no longer the Raft leader of this term")
	}
	var peers, others []string
	voters, self := 0, false
	for _, s := range e.servers() {
		if s.Suffrage != raft.Voter {
			others = append(others, string(s.Address))
			continue
		}
		voters++
		if string(s.ID) == cfg.ID {
			self = true
			continue
		}
		peers = append(peers, string(s.Address))
	}
	if voters == 0 {
		return time.Time{}, errNoLeader("no voters in the configuration")
	}
	need := voters/2 + 1
	own := cfg.HeartbeatTimeout
	if self {
		need--
	}
	deadline := time.Now().Add(cfg.HeartbeatTimeout)
	// Non-voters are asked too, for their health and applied index (the
	// voter-set maintenance's signal), but never counted: only voters
	// can elect another leader, so only their promises make the lease.
	e.x.probe(others, cfg.ID, term, deadline)
	got, err := e.x.round(peers, cfg.ID, term, need, deadline)
	if err != nil {
		return time.Time{}, errNoLeader(err.Error())
	}
	if len(got) > 0 {
		own = got[0] // the smallest promise of the quorum that answered
	}
	return start.Add(time.Duration(float64(own)*(1-cfg.MaxClockDrift)) - cfg.LeaseMargin), nil
}

// roundLease is the rule lockd used before the lease exchange, kept only as
// the --unsafe-debug switch round-lease so that the fault harness can show
// it catches it: the lease runs from the start of a VerifyLeader round.
// hashicorp/raft completes such a round with any answer that arrives after
// it began, including a late answer to a heartbeat the follower received
// long before, so this lease can outlive the follower's promise by the
// answer's delay.
func (e *raftEngine) roundLease(start time.Time) (time.Time, error) {
	if err := e.raft.VerifyLeader().Error(); err != nil {
		return time.Time{}, raftErr(err)
	}
	return start.Add(e.n.cfg.leaseDuration()), nil
}
