package elections

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/internal/ctxsleep"
)

// The Raft scenarios. Every run builds a fresh cluster of N nodes, waits
// for a leader and a committed entry that every node has applied, then
// crashes the leader: its transport goes dead and every peer drops its
// link to it, so that RPCs to it fail at once, as a refused TCP
// connection does. Counting starts at the crash and ends when a new
// leader's first Apply has committed. Time runs from the first PreVote or
// RequestVote to that commit; Detect, from the crash to that first vote,
// is Raft's failure detection (one to two RaftTimeouts since the last
// heartbeat).
//
//   - Best: the leader alone crashes, over the in-memory transport, which
//     delivers in microseconds.
//   - Worst: the leader and (N-1)/2 - 1 followers (the lowest ids) crash
//     together: the most failures the cluster survives, so the new leader
//     needs the vote of every survivor. For N = 3 that is the leader
//     alone, the same as Best.
//   - Random: the leader alone crashes, and every one-way message (RPC
//     or reply) is delayed RandomMinDelay to RandomMaxDelay, drawn from
//     the seed. Raft's own timeouts are random too, and not seeded.
//
// Best and Worst are single runs: Raft's randomized timeouts make even
// them vary from run to run.
const (
	// raftLimitFactor: each phase of a Raft run (first leader, new
	// leader and commit) may take at most this many RaftTimeouts.
	raftLimitFactor = 50
	// raftPoll is how often a run looks for a leader or an applied index.
	raftPoll = time.Millisecond
)

// raftCluster is N hashicorp/raft nodes in this process, over
// InmemTransport wrapped in countingTransport, with in-memory log, stable
// and snapshot stores.
type raftCluster struct {
	nodes     []*raftNode
	counter   *rpcCounter
	timeout   time.Duration
	shutdowns []raft.Future
}

type raftNode struct {
	id    raft.ServerID
	trans *countingTransport
	raft  *raft.Raft
}

// startRaftCluster starts n nodes, n1..nN, each bootstrapped with all of
// them as voters. With delays, every one-way message is delayed by a
// random RandomMinDelay..RandomMaxDelay drawn from seed.
func startRaftCluster(n int, timeout time.Duration, delays bool, seed uint64) (*raftCluster, error) {
	c := &raftCluster{counter: &rpcCounter{}, timeout: timeout}
	var conf raft.Configuration
	for i := 1; i <= n; i++ {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		_, inmem := raft.NewInmemTransportWithTimeout(raft.ServerAddress(id), timeout)
		t := &countingTransport{InmemTransport: inmem, c: c.counter}
		if delays {
			t.rng = rand.New(rand.NewPCG(seed, uint64(i)))
			t.minDelay, t.maxDelay = RandomMinDelay, RandomMaxDelay
		}
		c.nodes = append(c.nodes, &raftNode{id: id, trans: t})
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: id, Address: raft.ServerAddress(id)})
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans.InmemTransport)
			}
		}
	}
	for _, nd := range c.nodes {
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(c.raftConfig(nd.id), nopFSM{}, store, store, raft.NewInmemSnapshotStore(), nd.trans)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("bench: start raft %s: %w", nd.id, err)
		}
		nd.raft = r
		if err := r.BootstrapCluster(conf).Error(); err != nil {
			c.close()
			return nil, fmt.Errorf("bench: bootstrap raft %s: %w", nd.id, err)
		}
	}
	return c, nil
}

// raftConfig is raft's DefaultConfig with the bench's timeouts: the
// leader lease and CommitTimeout stay raft's defaults where the timeout
// allows.
func (c *raftCluster) raftConfig(id raft.ServerID) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = id
	rc.HeartbeatTimeout = c.timeout
	rc.ElectionTimeout = c.timeout
	rc.LeaderLeaseTimeout = min(rc.LeaderLeaseTimeout, c.timeout)
	rc.CommitTimeout = min(rc.CommitTimeout, c.timeout/4)
	rc.Logger = hclog.NewNullLogger()
	return rc
}

// commit waits for one of nodes to lead and commit an entry, and returns
// the leader and the entry's index. It retries an Apply that fails
// because leadership moved, until the limit.
func (c *raftCluster) commit(ctx context.Context, nodes []*raftNode) (*raftNode, uint64, error) {
	deadline := time.Now().Add(raftLimitFactor * c.timeout)
	for time.Now().Before(deadline) {
		leader, err := c.waitLeader(ctx, nodes, deadline)
		if err != nil {
			return nil, 0, err
		}
		f := leader.raft.Apply([]byte("bench"), time.Until(deadline))
		if f.Error() == nil {
			return leader, f.Index(), nil
		}
		if err := sleepCtx(ctx, raftPoll); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: nothing committed within %v", ErrNoLeader, raftLimitFactor*c.timeout)
}

// waitLeader polls nodes until one of them is leader.
func (c *raftCluster) waitLeader(ctx context.Context, nodes []*raftNode, deadline time.Time) (*raftNode, error) {
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			if nd.raft.State() == raft.Leader {
				return nd, nil
			}
		}
		if err := sleepCtx(ctx, raftPoll); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: none of %d nodes became leader within %v", ErrNoLeader, len(nodes), raftLimitFactor*c.timeout)
}

// waitApplied polls until every node has applied index.
func (c *raftCluster) waitApplied(ctx context.Context, index uint64) error {
	deadline := time.Now().Add(raftLimitFactor * c.timeout)
	for _, nd := range c.nodes {
		for nd.raft.AppliedIndex() < index {
			if !time.Now().Before(deadline) {
				return fmt.Errorf("%w: %s did not apply index %d within %v", ErrNoLeader, nd.id, index, raftLimitFactor*c.timeout)
			}
			if err := sleepCtx(ctx, raftPoll); err != nil {
				return err
			}
		}
	}
	return nil
}

// crash stops victims: their transports go dead first, so they send
// nothing more, then every other node drops its link to them, then they
// shut down (close waits for that).
func (c *raftCluster) crash(victims []*raftNode) {
	for _, v := range victims {
		v.trans.down.Store(true)
	}
	for _, v := range victims {
		for _, nd := range c.nodes {
			nd.trans.Disconnect(v.trans.LocalAddr())
		}
		v.trans.DisconnectAll()
	}
	for _, v := range victims {
		c.shutdowns = append(c.shutdowns, v.raft.Shutdown())
		v.raft = nil
	}
}

// close shuts every node down and waits for it.
func (c *raftCluster) close() {
	for _, nd := range c.nodes {
		if nd.raft != nil {
			nd.trans.down.Store(true)
			c.shutdowns = append(c.shutdowns, nd.raft.Shutdown())
			nd.raft = nil
		}
	}
	for _, f := range c.shutdowns {
		_ = f.Error()
	}
	c.shutdowns = nil
}

// measureRaft runs one Raft failover of scenario sc (see above).
func measureRaft(ctx context.Context, n int, sc Scenario, seed uint64, timeout time.Duration) (sample, error) {
	c, err := startRaftCluster(n, timeout, sc == Random, seed)
	if err != nil {
		return sample{}, err
	}
	defer c.close()
	leader, index, err := c.commit(ctx, c.nodes)
	if err != nil {
		return sample{}, err
	}
	if err := c.waitApplied(ctx, index); err != nil {
		return sample{}, err
	}
	victims := []*raftNode{leader}
	extra := 0
	if sc == Worst {
		extra = (n-1)/2 - 1
	}
	var survivors []*raftNode
	for _, nd := range c.nodes {
		switch {
		case nd == leader:
		case extra > 0:
			victims, extra = append(victims, nd), extra-1
		default:
			survivors = append(survivors, nd)
		}
	}
	c.counter.reset()
	crashed := time.Now()
	c.crash(victims)
	if _, _, err := c.commit(ctx, survivors); err != nil {
		return sample{}, err
	}
	done := time.Now()
	counts, first := c.counter.stop()
	if first.IsZero() {
		first = crashed
	}
	return sample{kinds: counts, time: done.Sub(first), detect: first.Sub(crashed)}, nil
}

// sleepCtx sleeps d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error { return ctxsleep.Sleep(ctx, d) }

// nopFSM is a state machine that keeps nothing: the bench counts the
// messages that commit entries, not what the entries do.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(r io.ReadCloser) error       { return r.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}
