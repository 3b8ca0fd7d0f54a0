package lease

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// voteTransport is what guardedTransport wraps: Raft's network transport
// in a node (raft.NetworkTransport), an in-memory one in tests.
type voteTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// guardedTransport is Raft's transport with lockd's checks around the
// three messages that can make another node leader: vote requests,
// pre-vote requests and TimeoutNow. It enforces what a follower promised
// the leader through the lease exchange, whatever Raft's own state says
// (assumption A1 of the package doc):
//
//   - While this node's promise runs (promiseGuard.bound), it grants no
//     vote or pre-vote, however Raft decides (the request is refused
//     before Raft sees it, and a grant Raft sends anyway is turned into a
//     refusal on its way out), and its own vote and pre-vote requests do
//     not leave it.
//   - A TimeoutNow is obeyed only when it comes from the leader this node
//     follows now, and that leader has released this node's promise for
//     the term this node is in (the release comes over the lease exchange
//     and is sent only after the leader gave its lease up for the term).
//     hashicorp/raft's TimeoutNow carries no term; the release's term is
//     what ties it to one, so a TimeoutNow delayed from an earlier term is
//     refused.
//   - An outgoing TimeoutNow leaves only through beforeTimeoutNow, which
//     the engine uses to check that this node gave its lease up for the
//     term and to release its followers' promises (A4).
//
// hashicorp/raft's follower loop does not re-read the last contact between
// deciding to campaign and campaigning, so a follower can answer the lease
// exchange with a full promise in that window and campaign right after;
// the checks here are what keep the promise.
type guardedTransport struct {
	voteTransport
	guard  *promiseGuard
	header raft.RPCHeader // this node's, on the refusals it answers itself

	raft   atomic.Pointer[raft.Raft]
	before atomic.Pointer[func(raft.ServerID, raft.ServerAddress) error]
	count  *guardCounts

	ch   chan raft.RPC
	done chan struct{}
	once sync.Once
}

var (
	errStaleTimeoutNow = errors.New("lease: TimeoutNow refused: it does not come from the leader this node follows, with this node's promise released for its term")
	errNoTimeoutNow    = errors.New("lease: TimeoutNow not sent: no check of the master lease is armed")
)

// guardCounts counts what a guarded transport refused, for the metrics:
// vote and pre-vote requests, both ways, and TimeoutNow requests.
type guardCounts struct{ votes, timeoutNow atomic.Uint64 }

// newGuardedTransport wraps t for the node id, counting refusals in c.
func newGuardedTransport(t voteTransport, id raft.ServerID, c *guardCounts) *guardedTransport {
	g := &guardedTransport{
		voteTransport: t, guard: newPromiseGuard(), count: c,
		header: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: t.EncodePeer(id, t.LocalAddr())},
		ch:     make(chan raft.RPC), done: make(chan struct{}),
	}
	go g.filter()
	return g
}

// start arms the TimeoutNow checks once Raft exists: until then every
// TimeoutNow is refused, both ways. before runs ahead of every outgoing
// TimeoutNow; an error keeps it from being sent.
func (g *guardedTransport) start(r *raft.Raft, before func(raft.ServerID, raft.ServerAddress) error) {
	g.before.Store(&before)
	g.raft.Store(r)
}

// Consumer returns the filtered stream of requests for Raft.
func (g *guardedTransport) Consumer() <-chan raft.RPC { return g.ch }

func (g *guardedTransport) filter() {
	in := g.voteTransport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.done:
			return
		}
		switch req := rpc.Command.(type) {
		case *raft.TimeoutNowRequest:
			if !g.obeys(req) {
				g.count.timeoutNow.Add(1)
				rpc.Respond(nil, errStaleTimeoutNow)
				continue
			}
		case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest:
			if g.guard.bound() {
				g.count.votes.Add(1)
				rpc.Respond(g.refusal(req), nil)
				continue
			}
			rpc = g.checkGrant(rpc)
		}
		select {
		case g.ch <- rpc:
		case <-g.done:
			return
		}
	}
}

// checkGrant makes rpc's answer pass the guard on its way out: a vote
// request that reached Raft before this node promised can be answered
// after it did, and such a grant leaves as a refusal.
func (g *guardedTransport) checkGrant(rpc raft.RPC) raft.RPC {
	out := rpc.RespChan
	ch := make(chan raft.RPCResponse, 1)
	rpc.RespChan = ch
	go func() {
		var resp raft.RPCResponse
		select {
		case resp = <-ch:
		case <-g.done:
			return
		}
		if withdrawn, ok := withdrawGrant(resp.Response); ok && g.guard.bound() {
			g.count.votes.Add(1)
			resp.Response = withdrawn
		}
		out <- resp
	}()
	return rpc
}

// refusal is this node's refusal of a vote or pre-vote request, in its
// current term as the request states it.
func (g *guardedTransport) refusal(req any) any {
	if r, ok := req.(*raft.RequestPreVoteRequest); ok {
		return &raft.RequestPreVoteResponse{RPCHeader: g.header, Term: r.Term}
	}
	return &raft.RequestVoteResponse{RPCHeader: g.header, Term: req.(*raft.RequestVoteRequest).Term}
}

// withdrawGrant returns a copy of resp that refuses, and true, when resp
// grants a vote or a pre-vote; resp and false otherwise.
func withdrawGrant(resp any) (any, bool) {
	switch r := resp.(type) {
	case *raft.RequestVoteResponse:
		if r.Granted {
			c := *r
			c.Granted = false
			return &c, true
		}
	case *raft.RequestPreVoteResponse:
		if r.Granted {
			c := *r
			c.Granted = false
			return &c, true
		}
	}
	return resp, false
}

// obeys reports whether a TimeoutNow may start an election here: it comes
// from the leader this node follows, which released this node's promise
// for the term this node is in.
func (g *guardedTransport) obeys(req *raft.TimeoutNowRequest) bool {
	r := g.raft.Load()
	if r == nil {
		return false
	}
	_, id := r.LeaderWithID()
	term := r.CurrentTerm()
	return id != "" && string(req.ID) == string(id) && g.guard.released(string(id), term)
}

// RequestVote sends a vote request unless this node's promise runs; then
// it answers for the peer with a refusal.
func (g *guardedTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if g.guard.bound() {
		g.count.votes.Add(1)
		*resp = raft.RequestVoteResponse{Term: args.Term}
		return nil
	}
	return g.voteTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote is RequestVote's check for pre-votes.
func (g *guardedTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if g.guard.bound() {
		g.count.votes.Add(1)
		*resp = raft.RequestPreVoteResponse{Term: args.Term}
		return nil
	}
	return g.voteTransport.RequestPreVote(id, target, args, resp)
}

// TimeoutNow sends a TimeoutNow only once the engine's check passed.
func (g *guardedTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	before := g.before.Load()
	if before == nil {
		return errNoTimeoutNow
	}
	if err := (*before)(id, target); err != nil {
		return fmt.Errorf("lease: TimeoutNow to %s not sent: %w", id, err)
	}
	return g.voteTransport.TimeoutNow(id, target, args, resp)
}

// Close stops the filter and closes the transport.
func (g *guardedTransport) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.voteTransport.Close()
}

// promiseGuard is a follower's record of the promises it made through the
// lease exchange, on the monotonic clock: until when it takes part in no
// election, and which leaders released it.
//
// A promise is armed before Raft's state is read for it (give), so that
// whatever Raft does after that read (its follower loop may already have
// decided to campaign) happens under the guard.
type promiseGuard struct {
	mu       sync.Mutex
	promised map[leaderOf]time.Time // the end of each promise still running
	pending  int                    // promises being made now
	pendEnd  time.Time              // the latest end a pending promise may take
	rel      leaderOf               // the newest release: that leader gave its lease up for that term
	now      func() time.Time
}

// leaderOf names a leader in one term.
type leaderOf struct {
	id   string
	term uint64
}

func newPromiseGuard() *promiseGuard {
	return &promiseGuard{promised: map[leaderOf]time.Time{}, now: time.Now}
}

// give makes a promise to leader in term: it arms the guard for up to
// most, then asks measure how long the promise lasts from now (<= 0: no
// promise; measure reads Raft's state and may take any time), and returns
// the promise, never longer than the guard holds. It returns releasedAnswer
// without arming anything if leader released this node for term.
func (g *promiseGuard) give(leader string, term uint64, most time.Duration, measure func() time.Duration) time.Duration {
	key := leaderOf{leader, term}
	g.mu.Lock()
	if g.rel == key {
		g.mu.Unlock()
		return releasedAnswer
	}
	armed := g.now()
	end := armed.Add(most)
	g.pending++
	if end.After(g.pendEnd) {
		g.pendEnd = end
	}
	g.mu.Unlock()

	left := min(measure(), end.Sub(g.now()))

	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	if g.pending == 0 {
		g.pendEnd = time.Time{}
	}
	switch {
	case g.rel == key:
		return releasedAnswer // released while measuring: the leader wants no promise
	case left <= 0:
		return 0
	}
	if end.After(g.promised[key]) {
		g.promised[key] = end
	}
	return left
}

// release records that leader gave its lease up for term: the promise made
// to it for term ends now, later requests of that leader in that term get
// releasedAnswer, and its TimeoutNow is obeyed in that term.
func (g *promiseGuard) release(leader string, term uint64) {
	key := leaderOf{leader, term}
	g.mu.Lock()
	defer g.mu.Unlock()
	if term >= g.rel.term {
		g.rel = key
	}
	delete(g.promised, key)
}

// released reports whether leader released this node's promise for term.
func (g *promiseGuard) released(leader string, term uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rel == leaderOf{leader, term}
}

// bound reports whether a promise runs now, or is being made.
func (g *promiseGuard) bound() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.pending > 0 && now.Before(g.pendEnd) {
		return true
	}
	for k, end := range g.promised {
		if now.Before(end) {
			return true
		}
		delete(g.promised, k)
	}
	return false
}
