package elections

import (
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The kinds of Raft message a row counts. Each RPC is counted once when
// it is sent, whether it arrives or not (as package classic counts a
// message to a dead node), and its reply once more when one comes back,
// so that the total is of one-way messages, as for the classic
// algorithms, whose replies (Answer, probe replies, ...) count too.
const (
	KindPreVote         = "pre_vote"         // RequestPreVote
	KindVote            = "vote"             // RequestVote
	KindAppendEmpty     = "append_empty"     // AppendEntries without entries: heartbeats and commit-index updates
	KindAppendEntries   = "append_entries"   // AppendEntries carrying log entries
	KindInstallSnapshot = "install_snapshot" // InstallSnapshot
	KindTimeoutNow      = "timeout_now"      // TimeoutNow (leadership transfer)
	KindReply           = "reply"            // a reply to any of the above
)

// RaftKinds lists the Raft kinds in column order.
var RaftKinds = []string{KindPreVote, KindVote, KindAppendEmpty, KindAppendEntries,
	KindInstallSnapshot, KindTimeoutNow, KindReply}

// errNodeDown is what a crashed node's transport returns: it sends
// nothing more.
var errNodeDown = errors.New("bench: node is down")

// rpcCounter counts the RPCs of one cluster. Counting is off until reset.
type rpcCounter struct {
	mu     sync.Mutex
	on     bool
	counts map[string]uint64
	// first is when the first PreVote or RequestVote was sent since reset.
	first time.Time
}

// reset zeroes the counts and starts counting.
func (c *rpcCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.counts, c.first = true, map[string]uint64{}, time.Time{}
}

// stop stops counting and returns the counts and when the election began.
func (c *rpcCounter) stop() (map[string]uint64, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.counts, c.first
}

func (c *rpcCounter) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	c.counts[kind]++
	if (kind == KindPreVote || kind == KindVote) && c.first.IsZero() {
		c.first = time.Now()
	}
}

// countingTransport is a raft.Transport that counts what it sends in a
// shared rpcCounter, delays each one-way message if asked to, and plays
// dead once its node has crashed. It refuses to pipeline AppendEntries
// (raft falls back to one RPC at a time), so that every AppendEntries
// passes through it and is counted.
type countingTransport struct {
	*raft.InmemTransport
	c    *rpcCounter
	down atomic.Bool
	// rng draws delays between minDelay and maxDelay; nil: no delay.
	mu                 sync.Mutex
	rng                *rand.Rand
	minDelay, maxDelay time.Duration
}

// The interfaces raft looks for: PreVote is used only if the transport
// offers it, and Close is called on shutdown.
var (
	_ raft.Transport   = (*countingTransport)(nil)
	_ raft.WithPreVote = (*countingTransport)(nil)
	_ raft.WithClose   = (*countingTransport)(nil)
)

// delay sleeps one one-way delay, if the transport has them.
func (t *countingTransport) delay() {
	if t.rng == nil {
		return
	}
	t.mu.Lock()
	d := t.minDelay + time.Duration(t.rng.Int64N(int64(t.maxDelay-t.minDelay)+1))
	t.mu.Unlock()
	time.Sleep(d)
}

// call counts and delays one RPC of kind around send.
func (t *countingTransport) call(kind string, send func() error) error {
	if t.down.Load() {
		return errNodeDown
	}
	t.c.add(kind)
	t.delay()
	if err := send(); err != nil {
		return err
	}
	t.c.add(KindReply)
	t.delay()
	return nil
}

// AppendEntriesPipeline refuses, so that raft sends every AppendEntries
// through AppendEntries.
func (t *countingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries counts a heartbeat (no entries) or a replication.
func (t *countingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	kind := KindAppendEntries
	if len(args.Entries) == 0 {
		kind = KindAppendEmpty
	}
	return t.call(kind, func() error { return t.InmemTransport.AppendEntries(id, target, args, resp) })
}

// RequestVote counts a vote request.
func (t *countingTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(KindVote, func() error { return t.InmemTransport.RequestVote(id, target, args, resp) })
}

// RequestPreVote counts a pre-vote request.
func (t *countingTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(KindPreVote, func() error { return t.InmemTransport.RequestPreVote(id, target, args, resp) })
}

// InstallSnapshot counts a snapshot sent.
func (t *countingTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return t.call(KindInstallSnapshot, func() error { return t.InmemTransport.InstallSnapshot(id, target, args, resp, data) })
}

// TimeoutNow counts a leadership transfer.
func (t *countingTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(KindTimeoutNow, func() error { return t.InmemTransport.TimeoutNow(id, target, args, resp) })
}
