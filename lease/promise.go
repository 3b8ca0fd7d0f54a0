package lease

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// promise is a follower's answer to the lease exchange: how much longer,
// by this node's clock, it takes part in no election, or 0 if it does not
// follow leader in term (releasedAnswer if leader released it for term).
//
// The promise is kept by the guarded transport, not by Raft's state: the
// guard is armed for a heartbeat timeout before Raft's state is read, so
// from then on no vote or pre-vote leaves this node, in either direction,
// until the promise ends (guardedTransport). Raft's state decides only
// whether to promise and for how long: a follower of leader in term whose
// last contact c is recent promises until c + HeartbeatTimeout, which is
// as long as Raft itself would wait before it campaigns. The reads are in
// that order on purpose: c first, then leader, term and state, so that a
// leader cleared and set again between the reads shows as a short
// promise, never as a longer one. What Raft's follower loop decided
// before the reads (hashicorp/raft may be between "my heartbeat timer
// fired" and "I am a candidate" while a heartbeat sets the leader back)
// cannot break the promise: the candidate's requests do not leave.
func (e *raftEngine) promise(term uint64, leader string) time.Duration {
	r := e.raft
	hb := r.ReloadableConfig().HeartbeatTimeout
	left := e.trans.guard.give(leader, term, hb, func() time.Duration {
		last := r.LastContact()
		_, id := r.LeaderWithID()
		if string(id) != leader || r.State() != raft.Follower || r.CurrentTerm() != term || last.IsZero() {
			return 0
		}
		return hb - time.Since(last)
	})
	if left <= 0 {
		return left
	}
	// Raft's own timers run on the system clock, so the promise is
	// measured on it too, with the heartbeat timeout Raft is using now,
	// and then told as this node's clock would tell it: a clock at rate r
	// (which also divides Raft's timeouts by r, see clockChanged) sees r
	// times the real time that is left. The guard holds it in real time.
	return time.Duration(clockRate(e.n.clock) * float64(left))
}

// releasedAnswer is a follower's answer to a leader that released it
// (exchange.go): it follows that leader, and promises nothing.
const releasedAnswer = time.Duration(-1)

// released is a follower's answer to a leader's release: leader gave its
// master lease up for term (for a leadership transfer, or before it
// leaves), so this node's promise to it ends now and its TimeoutNow may be
// obeyed in term. It answers releasedAnswer if it follows leader in term,
// 0 otherwise.
func (e *raftEngine) released(term uint64, leader string) time.Duration {
	e.trans.guard.release(leader, term)
	r := e.raft
	if _, id := r.LeaderWithID(); string(id) != leader || r.CurrentTerm() != term {
		return 0
	}
	return releasedAnswer
}

// beforeTimeoutNow runs before this node sends a TimeoutNow to id: it
// sends one only as the leader of its current term, with its master lease
// given up for that term (A4), and after it released every other voter
// for that term, so that the target obeys the TimeoutNow and the others
// may vote for it at once. The target's confirmation is waited for but
// not required: the target obeys only once the release has reached it
// (a network that carries this node's messages but not the answers still
// lets a transfer through), and refuses the TimeoutNow otherwise.
func (e *raftEngine) beforeTimeoutNow(id raft.ServerID, addr raft.ServerAddress) error {
	term := e.raft.CurrentTerm()
	t := e.n.termOf(term)
	if e.raft.State() != raft.Leader || t == nil || !t.isGiven() {
		return errors.New("this node has not given its master lease up for its term")
	}
	if !e.releaseFollowers(term)[string(addr)] {
		e.n.log.Warn("leadership transfer: the target did not confirm its release; sending TimeoutNow anyway", "to", id, "term", term)
	}
	return nil
}

// releaseFollowers tells every other voter that this node gave its lease up
// for term, and returns the addresses of those that confirmed, waiting
// for all of them for up to half the shorter of the heartbeat and
// election timeouts (Raft gives a whole transfer one election timeout).
func (e *raftEngine) releaseFollowers(term uint64) map[string]bool {
	var peers []string
	for _, s := range e.servers() {
		if s.Suffrage == raft.Voter && string(s.ID) != e.n.cfg.ID {
			peers = append(peers, string(s.Address))
		}
	}
	wait := min(e.n.cfg.ElectionTimeout, e.n.cfg.HeartbeatTimeout) / 2
	return e.x.release(peers, e.n.cfg.ID, term, time.Now().Add(wait))
}

// release keeps the followers released while this node leads in term with
// its lease given up: the lease loop calls it instead of renewing.
func (e *raftEngine) release(term uint64) { e.releaseFollowers(term) }

// lease confirms through the lease exchange that a quorum of the voters
// follows this node in term, and returns the end of the master lease:
// start plus the smallest remaining promise among that quorum, shrunk by
// the clock-drift bound, minus the margin. This node's own vote counts
// (a leader votes for nobody else in its term). See the package doc.
func (e *raftEngine) lease(term uint64, start time.Time) (time.Time, error) {
	cfg := e.n.cfg
	if until, on, err := e.unsafeRoundLease(start); on {
		return until, err
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
	return start.Add(cfg.leaseFor(own)), nil
}
