package lease

import (
	"context"
	"time"

	"github.com/lockd/lockd/api"
)

// engine decides who leads and carries commands into the FSM. raftEngine
// replicates through Raft; localEngine applies to this node's FSM alone and
// takes leadership from a classic elector. Everything else a Node does
// (sessions, deadlines, expiry, lock waits, reads) is the same for both.
type engine interface {
	// open starts the engine; the Node's FSM is ready.
	open() error
	// state reports whether this node leads and a number that identifies
	// its tenure: a new number means a new tenure.
	state() (leader bool, term uint64)
	// leaderID returns the node believed to lead, "" if none.
	leaderID() string
	// leaderAddr returns the node believed to lead and the peer address
	// to forward to it at, read together ("" if none; peer "" when the
	// engine forwards over HTTP).
	leaderAddr() (id, peer string)
	// leaderCh signals leadership changes early; nil if the engine has none
	// (the Node polls as well).
	leaderCh() <-chan bool
	// barrier returns once every entry of earlier tenures is applied.
	barrier(timeout time.Duration) error
	// lease confirms that this node still leads in tenure term and returns
	// the end of its master lease on the node's clock: a time before which
	// no other node can lead. start is the node's clock, read before the
	// confirmation began; the lease may not be measured from any earlier
	// moment.
	lease(term uint64, start time.Time) (time.Time, error)
	// release tells the followers that this node gave its lease up for
	// the rest of tenure term: the lease loop calls it instead of lease
	// once the lease is given up.
	release(term uint64)
	// apply commits data and returns the FSM's response.
	apply(data []byte, timeout time.Duration) (any, error)
	// transfer hands leadership to another node before a graceful stop.
	transfer() error
	// close stops the engine and releases its resources.
	close() error
	// memberHTTP returns a member's HTTP address, "" if unknown.
	memberHTTP(id string) string
	// describe fills in the engine's part of GET /v1/cluster.
	describe(c *api.Cluster) error
	addMember(ctx context.Context, m api.Member) error
	removeMember(ctx context.Context, id string) error
}
