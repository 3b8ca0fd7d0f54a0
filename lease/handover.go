package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
)

// TransferLeadership hands leadership to the voter to, or with to == "" to
// the voter Raft finds most up to date, and returns once this node has
// stepped down, naming the new leader if it is known by then.
//
// The master lease stays exclusive across the transfer: a transfer makes
// the followers vote at once, without waiting out the promises they made
// to this leader, so this node gives up its lease for the rest of its term
// before the transfer starts (as Close does), and never serves in that
// term again. The new leader serves once it has established its own
// lease; the two leases never overlap. A transfer that fails therefore
// leaves the cluster without a serving leader in this term: the node keeps
// handing leadership to any voter until one takes it (handOver), and the
// caller gets a timeout error.
//
// Before giving up the lease, it checks that the target (any other voter
// with to == "") answered the lease exchange lately, so that a transfer to
// a node that is down or cut off is refused without interrupting service.
func (n *Node) TransferLeadership(ctx context.Context, to string) (api.TransferResponse, error) {
	if n.raft == nil {
		return api.TransferResponse{}, api.Errorf(api.CodeBadRequest, "the classic modes have no leadership transfer: their algorithm picks the coordinator")
	}
	t, err := n.leading()
	if err != nil {
		return api.TransferResponse{}, err
	}
	return n.raft.transferTo(ctx, t, to)
}

// transferTarget checks to against the configuration and returns its
// peer address ("" for to == "") and the peer addresses of the other
// voters.
func (e *raftEngine) transferTarget(to string) (string, []string, error) {
	self := e.n.cfg.ID
	addr, found := "", false
	var voters []string
	for _, s := range e.servers() {
		id := string(s.ID)
		if s.Suffrage == raft.Voter && id != self {
			voters = append(voters, string(s.Address))
		}
		if to != "" && id == to {
			found = true
			addr = string(s.Address)
			if s.Suffrage != raft.Voter {
				return "", nil, api.Errorf(api.CodeBadRequest, "member %s is not a voter: only a voter can lead", to)
			}
		}
	}
	switch {
	case to == self:
		return "", nil, api.Errorf(api.CodeBadRequest, "%s already leads", to)
	case to != "" && !found:
		return "", nil, api.Errorf(api.CodeNotFound, "no member %q in the cluster", to)
	case len(voters) == 0:
		return "", nil, api.Errorf(api.CodeBadRequest, "no other voter to hand leadership to")
	}
	return addr, voters, nil
}

func (e *raftEngine) transferTo(ctx context.Context, t *leaderTerm, to string) (api.TransferResponse, error) {
	cfg := e.n.cfg
	addr, voters, err := e.transferTarget(to)
	if err != nil {
		return api.TransferResponse{}, err
	}
	ask := voters
	if to != "" {
		ask = []string{addr}
	}
	if !e.answeredLately(ask) {
		who := "no other voter has"
		if to != "" {
			who = to + " has not"
		}
		return api.TransferResponse{}, errTimeout(fmt.Sprintf(
			"%s confirmed within the last %v that it follows this leader (down, cut off or behind?); leadership stays with %s",
			who, cfg.HeartbeatTimeout, cfg.ID))
	}
	if !t.giveUpForTransfer() {
		return api.TransferResponse{}, api.Errorf(api.CodeBadRequest, "a leadership transfer is already under way")
	}
	e.n.log.Info("transferring leadership: master lease given up for the rest of the term", "term", t.raftTerm, "to", to)
	var f raft.Future
	if to == "" {
		f = e.raft.LeadershipTransfer()
	} else {
		f = e.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr))
	}
	if err := f.Error(); err != nil {
		e.n.log.Warn("leadership transfer failed; handing leadership to any voter", "term", t.raftTerm, "to", to, "err", err)
		go e.handOver(t)
		return api.TransferResponse{}, errTimeout(fmt.Sprintf(
			"leadership transfer failed: %v; %s stopped serving for it and hands leadership to another voter", err, cfg.ID))
	}
	res := api.TransferResponse{From: cfg.ID}
	// Raft answered once this node left the leader state; the new leader
	// is known here with its first heartbeat.
	deadline := time.Now().Add(2*cfg.ElectionTimeout + cfg.HeartbeatTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if id := e.leaderID(); id != "" && id != cfg.ID {
			res.Leader = api.LeaderInfo{ID: id, HTTP: e.memberHTTP(id)}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.n.log.Info("leadership transferred", "term", t.raftTerm, "to", res.Leader.ID)
	return res, nil
}

// handOver keeps transferring leadership after a transfer failed, to the
// voters that answered the lease exchange lately (Raft's own choice, the
// most up-to-date voter, may be the one that just failed), until this node no longer leads in term t, the node stops, or
// it has tried for a minute: it gave up its lease for the term and will
// not serve in it again.
func (e *raftEngine) handOver(t *leaderTerm) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if leader, term := e.state(); !leader || term != t.raftTerm {
			return
		}
		for _, s := range e.servers() {
			id, addr := string(s.ID), string(s.Address)
			if s.Suffrage != raft.Voter || id == e.n.cfg.ID || !e.answeredLately([]string{addr}) {
				continue
			}
			if err := e.raft.LeadershipTransferToServer(s.ID, s.Address).Error(); err == nil {
				e.n.log.Info("leadership handed over after the failed transfer", "term", t.raftTerm, "to", id)
				return
			}
		}
		select {
		case <-e.n.stop:
			return
		case <-time.After(e.n.cfg.ElectionTimeout):
		}
	}
	e.n.log.Warn("could not hand leadership over after a failed transfer; this node does not serve in its term", "term", t.raftTerm)
}

// answeredLately reports whether any of the peers answered this node's
// lease exchange with a promise within the last heartbeat timeout: the
// master lease asks every voter several times per heartbeat timeout, so a
// follower that is up and reachable has. The age is monotonic (liveness.go):
// a step of this node's wall clock neither passes a dead voter nor fails a
// live one.
func (e *raftEngine) answeredLately(peers []string) bool {
	for _, p := range peers {
		if at := e.x.lastPromise(p); !at.IsZero() && e.liveNow().Sub(at) < e.n.cfg.HeartbeatTimeout {
			return true
		}
	}
	return false
}

// giveUpForTransfer gives up the lease for a transfer, and reports false
// if it was given up already (another transfer is under way).
func (t *leaderTerm) giveUpForTransfer() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.given {
		return false
	}
	t.giveUpLeaseLocked()
	return true
}
