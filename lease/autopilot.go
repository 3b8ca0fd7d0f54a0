package lease

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// The voter-set maintenance (Config.Voters > 0) keeps the number of
// voters at Voters while members die and non-voters stand by. It runs on
// the leader only, as a loop that looks at the configuration and the
// members' health every heartbeat timeout, asks decide for at most one
// change, makes it, and waits for Raft to commit it before it looks again.
//
// Health comes from the lease exchange: every voter answers the leader's
// lease rounds and every non-voter its probes several times per heartbeat
// timeout, each answer carrying the member's applied index. A member is
// healthy while its last answer is younger than a heartbeat timeout.
//
// What it does, in the order decide checks:
//
//  1. More voters than Voters and a voter dead (unhealthy for
//     DeadVoterAfter without a break): remove the dead voter. This is the
//     second half of a replacement, or an extra that died.
//  2. A voter dead, no more voters than Voters, and a healthy, caught-up
//     non-voter: promote the non-voter. Step 1 then removes the dead
//     voter. Promoting first never leaves fewer healthy voters than a
//     quorum of the configuration in force: the new voter counts as one.
//  3. Fewer voters than Voters and a healthy, caught-up non-voter: promote.
//  4. More voters than Voters: demote one, never the leader, never one
//     promoted less than DeadVoterAfter ago: an unhealthy one first, then
//     the one furthest behind.
//
// What it never does: change the configuration while an earlier change is
// not committed; remove or demote a voter if the healthy voters left would
// not make a quorum of the new configuration; promote if the healthy
// voters with the new one would not make a quorum of the new
// configuration; remove a dead voter it has no replacement for (with
// Voters or fewer voters); touch the leader itself.
//
// Hysteresis, against flapping: a voter is dead only once it has been
// unhealthy for DeadVoterAfter without a break (an answer restarts the
// count); a non-voter is a candidate only once it has been healthy for
// DeadVoterAfter without a break; a voter is demoted only DeadVoterAfter
// after it was promoted or this leader took over. The lower and upper
// limits are both Voters: Raft wants an odd number of voters, so the
// loop aims at exactly that, and the time thresholds make the hysteresis.

// maxCandidateLag is how many log entries a non-voter's applied index may
// be behind the leader's commit index for it to be promoted: at a few
// thousand writes per second, under a second of catching up.
const maxCandidateLag = 1024

// Kinds of change the maintenance makes (the label of
// lockd_autopilot_changes_total).
const (
	apPromote = "promote"
	apDemote  = "demote"
	apRemove  = "remove"
)

// apMember is what decide sees of one member.
type apMember struct {
	ID, Addr string
	Voter    bool
	Self     bool // the leader that decides
	// Healthy: the member answered the leader within a heartbeat timeout
	// (always true for Self).
	Healthy bool
	// DownFor is how long the member has been unhealthy without a break
	// (0 while healthy); HealthyFor how long it has been healthy without
	// a break (0 while unhealthy).
	DownFor, HealthyFor time.Duration
	// VoterFor is how long the member has been a voter as far as this
	// leader knows: since this leader promoted it or took over.
	VoterFor time.Duration
	Applied  uint64 // the applied index the member last reported
}

// apPolicy is the configuration decide works to.
type apPolicy struct {
	Voters int           // voters to keep
	After  time.Duration // DeadVoterAfter: dead, stable, candidate
	MaxLag uint64        // how far behind the commit index a candidate may be
}

// apAction is one configuration change.
type apAction struct {
	Kind     string // apPromote, apDemote or apRemove
	ID, Addr string
	Reason   string
}

func quorum(voters int) int { return voters/2 + 1 }

// decide returns the one change the configuration needs now, if any. It
// is a pure function of its input; see the comment at the top of the
// file for the rules.
func decide(ms []apMember, commit uint64, p apPolicy) (apAction, bool) {
	if p.Voters <= 0 {
		return apAction{}, false
	}
	var voters, dead, cands []apMember
	healthy := 0
	for _, m := range ms {
		switch {
		case m.Voter:
			voters = append(voters, m)
			if m.Self || m.Healthy {
				healthy++
			}
			if !m.Self && !m.Healthy && m.DownFor >= p.After {
				dead = append(dead, m)
			}
		case m.Healthy && m.HealthyFor >= p.After && m.Applied+p.MaxLag >= commit:
			cands = append(cands, m)
		}
	}
	// The longest dead first; the most caught-up candidate first.
	slices.SortFunc(dead, func(a, b apMember) int { return cmp.Or(cmp.Compare(b.DownFor, a.DownFor), cmp.Compare(a.ID, b.ID)) })
	slices.SortFunc(cands, func(a, b apMember) int { return cmp.Or(cmp.Compare(b.Applied, a.Applied), cmp.Compare(a.ID, b.ID)) })
	n := len(voters)
	canPromote := len(cands) > 0 && healthy+1 >= quorum(n+1)
	switch {
	case len(dead) > 0 && n > p.Voters && healthy >= quorum(n-1):
		d := dead[0]
		return apAction{Kind: apRemove, ID: d.ID, Addr: d.Addr, Reason: fmt.Sprintf(
			"voter unreachable for %v, %d voters where %d are wanted", d.DownFor.Round(time.Millisecond), n, p.Voters)}, true
	case len(dead) > 0 && n <= p.Voters && canPromote:
		c := cands[0]
		return apAction{Kind: apPromote, ID: c.ID, Addr: c.Addr, Reason: fmt.Sprintf(
			"replaces voter %s, unreachable for %v (the dead voter is removed next)", dead[0].ID, dead[0].DownFor.Round(time.Millisecond))}, true
	case n < p.Voters && canPromote:
		c := cands[0]
		return apAction{Kind: apPromote, ID: c.ID, Addr: c.Addr, Reason: fmt.Sprintf("%d voters where %d are wanted", n, p.Voters)}, true
	case n > p.Voters:
		var extra []apMember
		for _, m := range voters {
			if !m.Self && m.VoterFor >= p.After {
				extra = append(extra, m)
			}
		}
		// Unhealthy first, then the furthest behind, then by id.
		slices.SortFunc(extra, func(a, b apMember) int {
			if a.Healthy != b.Healthy {
				if a.Healthy {
					return 1
				}
				return -1
			}
			return cmp.Or(cmp.Compare(a.Applied, b.Applied), cmp.Compare(b.ID, a.ID))
		})
		for _, m := range extra {
			left := healthy
			if m.Healthy {
				left--
			}
			if left >= quorum(n-1) {
				return apAction{Kind: apDemote, ID: m.ID, Addr: m.Addr,
					Reason: fmt.Sprintf("%d voters where %d are wanted", n, p.Voters)}, true
			}
		}
	}
	return apAction{}, false
}

// apHealth is what the loop remembers of one member between ticks. Its
// times, like the loop's start and now, are readings of liveNow, monotonic
// part and all: the ages decide works with are differences of them and of
// the exchange's answer times (liveness.go), immune to wall-clock steps.
type apHealth struct {
	firstSeen    time.Time // when this loop first saw the member
	healthySince time.Time // zero while unhealthy
	promotedAt   time.Time // when this loop promoted it; zero if it did not
}

// autopilot runs the voter-set maintenance for the term t until it ends.
func (e *raftEngine) autopilot(t *leaderTerm) {
	defer t.wg.Done()
	cfg := e.n.cfg
	start := e.liveNow()
	seen := map[string]*apHealth{}
	policy := apPolicy{Voters: cfg.Voters, After: cfg.DeadVoterAfter, MaxLag: maxCandidateLag}
	tick := time.NewTicker(cfg.HeartbeatTimeout)
	defer tick.Stop()
	lastErr := ""
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		f := e.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		if _, ok := e.latestConfCommitted(); !ok {
			continue // an earlier change is not committed yet
		}
		now := e.liveNow()
		ms := e.apView(f.Configuration().Servers, seen, start, now)
		a, ok := decide(ms, e.raft.CommitIndex(), policy)
		if !ok || t.ended() {
			continue
		}
		if err := e.apApply(t, a, f.Index()); err != nil {
			if msg := a.Kind + " " + a.ID + ": " + err.Error(); msg != lastErr {
				e.n.log.Warn("voter-set change failed; trying again", "change", a.Kind, "id", a.ID, "reason", a.Reason, "err", err)
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		if a.Kind == apPromote {
			if h := seen[a.ID]; h != nil {
				h.promotedAt = e.liveNow()
			}
		}
		if c := e.n.count.autopilot; c != nil {
			c.WithLabelValues(a.Kind).Inc()
		}
		e.n.log.Info("voter set changed", "change", a.Kind, "id", a.ID, "peer", a.Addr, "reason", a.Reason)
	}
}

// apView builds decide's input from the configuration and the lease
// exchange's record of each member's last answer, and updates seen. start
// and now are readings of liveNow, as seen's times are.
func (e *raftEngine) apView(servers []raft.Server, seen map[string]*apHealth, start, now time.Time) []apMember {
	hb := e.n.cfg.HeartbeatTimeout
	var ms []apMember
	for _, s := range servers {
		id, addr := string(s.ID), string(s.Address)
		m := apMember{ID: id, Addr: addr, Voter: s.Suffrage == raft.Voter, Self: id == e.n.cfg.ID}
		h := seen[id]
		if h == nil {
			h = &apHealth{firstSeen: now}
			seen[id] = h
		}
		applied, at := e.x.peerApplied(addr)
		m.Applied = applied
		m.Healthy = m.Self || !at.IsZero() && now.Sub(at) < hb
		switch {
		case m.Self:
			m.Applied = e.raft.AppliedIndex()
		case m.Healthy:
			if h.healthySince.IsZero() {
				h.healthySince = now
			}
			m.HealthyFor = now.Sub(h.healthySince)
		default:
			h.healthySince = time.Time{}
			m.DownFor = now.Sub(latest(at, h.firstSeen))
		}
		m.VoterFor = now.Sub(latest(start, h.promotedAt))
		ms = append(ms, m)
	}
	return ms
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// apApply makes one change against the configuration at index prev and
// waits for Raft to commit it. A configuration that changed since then
// makes Raft refuse the change; the loop looks again.
func (e *raftEngine) apApply(t *leaderTerm, a apAction, prev uint64) error {
	timeout := e.n.cfg.ApplyTimeout
	id := raft.ServerID(a.ID)
	switch a.Kind {
	case apPromote:
		return futureErr(e.raft.AddVoter(id, raft.ServerAddress(a.Addr), prev, timeout))
	case apDemote:
		return futureErr(e.raft.DemoteVoter(id, prev, timeout))
	case apRemove:
		term := e.raft.CurrentTerm()
		f := e.raft.RemoveServer(id, prev, timeout)
		if err := f.Error(); err != nil {
			return raftErr(err)
		}
		// The member table forgets it too, and the node is told, should
		// it be up after all (cut off rather than dead): it stops serving.
		if _, err := e.n.propose(t.ctx, fsm.Command{Op: fsm.OpRemoveMember, Member: &fsm.Member{ID: a.ID}}); err != nil {
			e.n.log.Warn("removed member stays in the member table", "id", a.ID, "err", err)
		}
		if e.raft.CurrentTerm() == term {
			go e.tellRemoved(a.ID, a.Addr, f.Index(), term)
		}
		return nil
	}
	return fmt.Errorf("unknown change %q", a.Kind)
}

func futureErr(f raft.Future) error {
	if err := f.Error(); err != nil {
		return raftErr(err)
	}
	return nil
}
