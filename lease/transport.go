package lease

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// guardedTransport is Raft's network transport with one check on the
// receiving side: a TimeoutNow request is obeyed only when it comes from
// the node this node follows now. TimeoutNow makes a node start an election
// at once, flagged as a leadership transfer, and the other nodes vote for
// such a candidate even while they know a leader. hashicorp/raft's
// TimeoutNow carries no term, so without this check a request that an
// earlier leader sent for a transfer and that the network delayed could
// start an election that overrides the current leader's master lease.
//
// What remains: a leader that started a transfer, lost leadership and was
// elected again while its own TimeoutNow is still in flight. It gave up its
// lease for the earlier term only; the window needs a message delayed
// across a whole election that the same node wins.
type guardedTransport struct {
	*raft.NetworkTransport
	raft atomic.Pointer[raft.Raft]
	ch   chan raft.RPC
	done chan struct{}
	once sync.Once
}

var errStaleTimeoutNow = errors.New("lease: TimeoutNow refused: it does not come from the leader this node follows")

func newGuardedTransport(t *raft.NetworkTransport) *guardedTransport {
	g := &guardedTransport{NetworkTransport: t, ch: make(chan raft.RPC), done: make(chan struct{})}
	go g.filter()
	return g
}

// start arms the check once Raft exists; until then TimeoutNow is refused.
func (g *guardedTransport) start(r *raft.Raft) { g.raft.Store(r) }

// Consumer returns the filtered stream of requests for Raft.
func (g *guardedTransport) Consumer() <-chan raft.RPC { return g.ch }

func (g *guardedTransport) filter() {
	in := g.NetworkTransport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.done:
			return
		}
		if req, ok := rpc.Command.(*raft.TimeoutNowRequest); ok && !g.fromLeader(req) {
			rpc.Respond(nil, errStaleTimeoutNow)
			continue
		}
		select {
		case g.ch <- rpc:
		case <-g.done:
			return
		}
	}
}

func (g *guardedTransport) fromLeader(req *raft.TimeoutNowRequest) bool {
	r := g.raft.Load()
	if r == nil {
		return false
	}
	_, id := r.LeaderWithID()
	return id != "" && string(req.ID) == string(id)
}

// Close stops the filter and closes the network transport.
func (g *guardedTransport) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.NetworkTransport.Close()
}
