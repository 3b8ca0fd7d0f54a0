// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// faultLogs makes StoreLogs block, once armed, until released, and then
// fail without writing (a crash or a disk error) or write.
type faultLogs struct {
	LogStore
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan error
}

func (f *faultLogs) arm() {
	f.mu.Lock()
	f.armed, f.entered, f.release = true, make(chan struct{}), make(chan error, 1)
	f.mu.Unlock()
}

func (f *faultLogs) StoreLogs(ls []*Log) error {
	f.mu.Lock()
	armed, entered, release := f.armed, f.entered, f.release
	f.armed = false
	f.mu.Unlock()
	if armed {
		close(entered)
		if err := <-release; err != nil {
			return err
		}
	}
	return f.LogStore.StoreLogs(ls)
}

func (f *faultLogs) StoreLog(l *Log) error { return f.StoreLogs([]*Log{l}) }

// unblock lets a write still held complete, so that a failed test can
// shut its cluster down instead of hanging.
func (f *faultLogs) unblock() {
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	if release != nil {
		select {
		case release <- nil:
		default:
		}
	}
}

// leaders returns the nodes that are leader now, without waiting (for
// conditions polled by require.Eventually, whose goroutine must not call
// the cluster's own waits: they fail the test from it).
func leaders(c *cluster) []*Raft {
	var out []*Raft
	for _, r := range c.rafts {
		if r.State() == Leader {
			out = append(out, r)
		}
	}
	return out
}

// closeOnCleanup closes c when the test ends, after releasing any write
// its log stores still hold.
func closeOnCleanup(t *testing.T, c *cluster, fl ...*faultLogs) {
	t.Cleanup(func() {
		for _, f := range fl {
			f.unblock()
		}
		c.Close()
	})
}

func parallelCluster(t *testing.T) (*cluster, []*faultLogs) {
	conf := inmemConfig(t)
	conf.ParallelLeaderAppend = true
	var fl []*faultLogs
	c := MakeClusterCustom(t, &MakeClusterOpts{Peers: 3, Bootstrap: true, Conf: conf,
		WrapLogStore: func(i int, s LogStore) LogStore {
			f := &faultLogs{LogStore: s}
			fl = append(fl, f)
			return f
		}})
	closeOnCleanup(t, c, fl...)
	return c, fl
}

// The leader's write of an entry fails after the followers stored it: the
// followers commit it, the leader never applies it nor answers success,
// steps down, and the next leader has it.
func TestParallelAppend_LeaderWriteFailsAfterSend(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	fl[li].arm()
	f := leader.Apply([]byte("x"), 0)
	<-fl[li].entered
	idx := leader.getLastIndex()
	// Both followers store x; the leader's commit index passes it.
	require.Eventually(t, func() bool { return leader.getCommitIndex() >= idx }, 2*time.Second, time.Millisecond)
	require.Less(t, leader.getLastApplied(), idx, "leader applied an entry it has not written")
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("future answered before the leader's write")
	default:
	}
	fl[li].release <- errors.New("crash before the write")
	require.ErrorIs(t, f.Error(), ErrLeadershipLost)
	last, _ := c.stores[li].LastIndex()
	require.Less(t, last, idx)
	// A new leader (any of the three) has x; every FSM gets it.
	c.WaitForReplication(2)
	c.EnsureSame(t)
	t.Logf("new leader %v", c.Leader())
	for _, m := range c.fsms {
		logs := getMockFSM(m).Logs()
		require.Equal(t, []byte("x"), logs[len(logs)-1])
	}
}

// Leadership is lost while the leader's write is pending: a new leader in
// a higher term replicates to it, and the old leader's main thread waits
// for its own write before it touches its log as a follower.
func TestParallelAppend_LeadershipLostWhileWritePending(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	fl[li].arm()
	f := leader.Apply([]byte("x"), 0)
	<-fl[li].entered
	c.Disconnect(leader.localAddr)
	var newLeader *Raft
	require.Eventually(t, func() bool {
		for _, r := range leaders(c) {
			if r != leader {
				newLeader = r
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, newLeader.Apply([]byte("y"), time.Second).Error())
	c.FullyConnect()
	time.Sleep(100 * time.Millisecond) // the old leader now holds a higher-term AppendEntries
	fl[li].release <- nil              // its write completes late
	err := f.Error()
	require.True(t, err == nil || errors.Is(err, ErrLeadershipLost), "%v", err)
	// x's outcome is unknown unless it succeeded: the followers may have
	// been cut off before x reached them, and then the new leader never
	// had it. Either way every node ends with the same log; a success
	// means every node has x.
	c.EnsureSame(t) // waits until every FSM has what the new leader's has, y included
	if err == nil {
		for _, m := range c.fsms {
			require.Contains(t, getMockFSM(m).Logs(), []byte("x"), "x was answered success but is missing")
		}
	}
}

// The write fails while only one follower has the entry: no majority, so
// the client must not hear success; every node converges either way.
func TestParallelAppend_WriteFailsWithoutMajority(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	other := c.Followers()[0]
	c.Partition([]ServerAddress{other.localAddr})
	fl[li].arm()
	f := leader.Apply([]byte("x"), 0)
	<-fl[li].entered
	time.Sleep(50 * time.Millisecond)
	fl[li].release <- errors.New("disk error")
	require.ErrorIs(t, f.Error(), ErrLeadershipLost)
	c.FullyConnect()
	require.Eventually(t, func() bool { return len(leaders(c)) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Leader().Apply([]byte("z"), time.Second).Error())
	c.EnsureSame(t)
}

// R2: the leader is not counted before its own write returns.
func TestParallelAppend_LeaderCountedOnlyAfterWrite(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	c.Partition([]ServerAddress{c.Followers()[0].localAddr})
	fl[li].arm()
	f := leader.Apply([]byte("x"), 0)
	<-fl[li].entered
	idx := leader.getLastIndex()
	time.Sleep(100 * time.Millisecond)
	require.Less(t, leader.getCommitIndex(), idx)
	fl[li].release <- nil
	require.NoError(t, f.Error())
	require.GreaterOrEqual(t, leader.getCommitIndex(), idx)
}

// The leader crashes after the followers stored x and before its own write
// (nothing of x reaches its disk), then restarts from what its disk holds:
// it cannot win an election against the followers, which hold x, and it
// gets x back from the new leader. Nothing committed is lost.
func TestParallelAppend_LeaderCrashesBeforeItsWriteAndRestarts(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	fl[li].arm()
	f := leader.Apply([]byte("x"), 0)
	<-fl[li].entered
	idx := leader.getLastIndex()
	require.Eventually(t, func() bool { return leader.getCommitIndex() >= idx }, 2*time.Second, time.Millisecond)

	// The crash: the write never happens, the process ends.
	fl[li].release <- errors.New("killed before the write")
	require.NoError(t, leader.Shutdown().Error())
	require.Error(t, f.Error(), "a future answered success for an entry its leader never wrote")
	last, err := c.stores[li].LastIndex()
	require.NoError(t, err)
	require.Less(t, last, idx, "the crashed leader's disk holds x")

	// The restart, from the disk only: a new FSM, the inner store, a new transport.
	_, trans := NewInmemTransport(leader.localAddr)
	cfg := leader.config()
	fsm := &MockFSM{}
	r, err := NewRaft(&cfg, fsm, c.stores[li], c.stores[li], c.snaps[li], trans)
	require.NoError(t, err)
	c.rafts[li], c.fsms[li], c.trans[li] = r, fsm, trans
	c.FullyConnect()

	require.Eventually(t, func() bool {
		ls := leaders(c)
		return len(ls) == 1 && ls[0] != r
	}, 5*time.Second, 5*time.Millisecond, "no leader but the node without x")
	c.WaitForReplication(2)
	c.EnsureSame(t)
	logs := fsm.Logs()
	require.Equal(t, []byte("x"), logs[len(logs)-1])
}

// A single node commits an entry only once its own write returned.
func TestParallelAppend_SingleNodeCommitsAfterItsWrite(t *testing.T) {
	conf := inmemConfig(t)
	conf.ParallelLeaderAppend = true
	var f1 *faultLogs
	c := MakeClusterCustom(t, &MakeClusterOpts{Peers: 1, Bootstrap: true, Conf: conf,
		WrapLogStore: func(_ int, s LogStore) LogStore { f1 = &faultLogs{LogStore: s}; return f1 }})
	closeOnCleanup(t, c, f1)
	r := c.Leader()
	require.NoError(t, r.Apply([]byte("a"), time.Second).Error())
	f1.arm()
	f := r.Apply([]byte("x"), 0)
	<-f1.entered
	idx := r.getLastIndex()
	time.Sleep(50 * time.Millisecond)
	require.Less(t, r.getCommitIndex(), idx)
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("future answered before the only write")
	default:
	}
	f1.release <- nil
	require.NoError(t, f.Error())
	require.GreaterOrEqual(t, r.getCommitIndex(), idx)
}

// The leader's write of a configuration entry fails: the leader steps
// down and its latest configuration is again one its disk holds, not the
// unwritten one; the cluster then agrees on one configuration.
func TestParallelAppend_FailedWriteOfAConfiguration(t *testing.T) {
	c, fl := parallelCluster(t)
	leader := c.Leader()
	require.NoError(t, leader.Apply([]byte("a"), time.Second).Error())
	li := c.IndexOf(leader)
	before := leader.GetConfiguration()
	require.NoError(t, before.Error())
	// One follower cannot hear the change, so it cannot commit without
	// the leader's own write.
	c.Partition([]ServerAddress{c.Followers()[0].localAddr})
	fl[li].arm()
	f := leader.AddNonvoter("n-new", "addr-new", 0, 0)
	<-fl[li].entered
	fl[li].release <- errors.New("disk error")
	require.ErrorIs(t, f.Error(), ErrLeadershipLost)
	require.Eventually(t, func() bool { return leader.State() != Leader }, time.Second, time.Millisecond)
	got := leader.GetConfiguration()
	require.NoError(t, got.Error())
	last, err := c.stores[li].LastIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, got.Index(), last, "latest configuration is an entry the node never wrote")
	require.Equal(t, before.Configuration(), got.Configuration())
	c.FullyConnect()
	require.Eventually(t, func() bool { return len(leaders(c)) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Leader().Apply([]byte("z"), time.Second).Error())
	c.WaitForReplication(2)
	c.EnsureSamePeers(t)
}
