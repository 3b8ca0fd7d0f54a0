package lease

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// Elector chooses the coordinator in a classic mode (ring, bully,
// invitation). classic.Node satisfies it.
type Elector interface {
	// Coordinator returns the coordinator this node believes in and the
	// epoch (or group id) of that belief; ok is false during an election.
	Coordinator() (id string, epoch uint64, ok bool)
}

// Local configures a classic-mode node (NewLocal).
type Local struct {
	// Elector decides who coordinates. The caller starts and closes it.
	Elector Elector
	// Members maps node ids to HTTP URLs, for forwarding (nothing is
	// replicated in a classic mode, so there is no member table). A
	// member it does not name is looked up with Learned.
	Members map[string]string
	// Learned returns the HTTP URL a member told this node over the peer
	// port, "" if none yet (classic.MuxTransport.PeerHTTP). It may be nil.
	Learned func(id string) string
	// Describe adds the mode's own fields (name, counters) to GET
	// /v1/cluster. It may be nil.
	Describe func(*api.Cluster)
}

// NewLocal returns a classic-mode Node: whichever node the elector names
// coordinator serves the whole API from its own state machine, which
// nothing replicates. Each tenure starts from empty state, so a change of
// coordinator loses every session and lock; two nodes that both believe
// they coordinate (a partition, for ring and bully) both serve. That is the
// point of these modes: to show what the classic algorithms do not give.
// Fencing tokens stay increasing across tenures only as far as the nodes'
// wall clocks agree (see localEngine.apply).
func NewLocal(cfg Config, l Local) (*Node, error) {
	n, err := newNode(cfg)
	if err != nil {
		return nil, err
	}
	if l.Elector == nil {
		return nil, errors.New("lease: NewLocal: an Elector is required")
	}
	n.eng = &localEngine{n: n, l: l}
	return n, nil
}

// localEngine applies commands to this node's FSM alone and takes
// leadership from a classic elector.
type localEngine struct {
	n *Node
	l Local

	mu     sync.Mutex
	index  uint64 // last index applied; the token of a grant
	epoch  uint64 // epoch of the current tenure
	leader bool
}

func (e *localEngine) open() error { return nil }

func (e *localEngine) state() (bool, uint64) {
	id, epoch, ok := e.l.Elector.Coordinator()
	return ok && id == e.n.cfg.ID, epoch
}

func (e *localEngine) leaderID() string {
	if id, _, ok := e.l.Elector.Coordinator(); ok {
		return id
	}
	return ""
}

// leaderAddr names the coordinator with no peer address: the classic
// modes forward over HTTP.
func (e *localEngine) leaderAddr() (string, string) { return e.leaderID(), "" }

func (e *localEngine) leaderCh() <-chan bool { return nil }

// barrier starts a tenure: the state machine is emptied, since whatever it
// held was this node's alone and may be long out of date, and indexes jump
// to the wall clock in microseconds, so that tokens granted by this tenure
// exceed those of earlier coordinators whose clocks were not ahead.
func (e *localEngine) barrier(time.Duration) error {
	empty, err := fsm.New().Snapshot()
	if err != nil {
		return err
	}
	if err := e.n.fsm.Restore(bytes.NewReader(empty)); err != nil {
		return err
	}
	_, epoch := e.state()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.index = max(e.index, uint64(time.Now().UnixMicro()))
	e.epoch, e.leader = epoch, true
	e.n.log.Debug("coordinator tenure starts from empty state", "epoch", epoch, "first_index", e.index+1)
	return nil
}

// lease gives a coordinator that still coordinates the same lease a Raft
// leader would get; nothing backs it (see the file comment).
func (e *localEngine) lease(_ uint64, start time.Time) (time.Time, error) {
	leader, epoch := e.state()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !leader || epoch != e.epoch {
		return time.Time{}, errNoLeader("this node no longer coordinates")
	}
	return start.Add(e.n.cfg.leaseDuration()), nil
}

// release has nothing to release: no follower promised a coordinator.
func (e *localEngine) release(uint64) {}

func (e *localEngine) apply(data []byte, _ time.Duration) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.index++
	return e.n.fsm.Apply(e.index, data), nil
}

func (e *localEngine) transfer() error { return nil }

func (e *localEngine) close() error { return nil }

func (e *localEngine) memberHTTP(id string) string {
	switch {
	case e.l.Members[id] != "":
		return e.l.Members[id]
	case id == e.n.cfg.ID:
		return e.n.cfg.HTTPAddr
	case e.l.Learned != nil:
		return e.l.Learned(id)
	}
	return ""
}

func (e *localEngine) describe(c *api.Cluster) error {
	id, epoch, ok := e.l.Elector.Coordinator()
	c.State = "member"
	if ok && id == e.n.cfg.ID {
		c.State = "coordinator"
	}
	c.Term, c.Epoch = epoch, epoch
	if ok {
		c.Coordinator = id
	}
	c.CommitIndex = e.n.fsm.AppliedIndex()
	c.AppliedIndex = c.CommitIndex
	peers := slices.Clone(e.n.cfg.InitialCluster)
	slices.SortFunc(peers, func(a, b Peer) int { return cmp.Compare(a.ID, b.ID) })
	for _, m := range peers {
		c.Members = append(c.Members, api.Member{ID: m.ID, Peer: m.Addr, HTTP: e.memberHTTP(m.ID), Voter: true, Leader: ok && m.ID == id})
	}
	if e.l.Describe != nil {
		e.l.Describe(c)
	}
	return nil
}

func (e *localEngine) addMember(context.Context, api.Member) error {
	return api.Errorf(api.CodeBadRequest, "membership is static in the classic modes")
}

func (e *localEngine) removeMember(context.Context, string) error {
	return api.Errorf(api.CodeBadRequest, "membership is static in the classic modes")
}
