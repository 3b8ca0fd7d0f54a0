// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"sync"
	"sync/atomic"
)

// errLeaderAppendFailed answers a flush after an earlier write failed.
var errLeaderAppendFailed = errors.New("an earlier write of the leader's log failed")

// leaderAppendDepth bounds the batches queued for the leader's own write;
// dispatchLogs blocks beyond it, as it blocks on StoreLogs without the flag.
const leaderAppendDepth = 16

// pendingLogs holds the leader's entries from dispatch until its own write
// of them returns, so that replication can send them meanwhile.
type pendingLogs struct {
	mu    sync.RWMutex
	first uint64 // index of logs[0]
	logs  []*Log
}

func (p *pendingLogs) add(ls []*Log) {
	p.mu.Lock()
	if len(p.logs) == 0 {
		p.first = ls[0].Index
	}
	p.logs = append(p.logs, ls...)
	p.mu.Unlock()
}

// release drops the entries up to index, which are in the log store now.
func (p *pendingLogs) release(index uint64) {
	p.mu.Lock()
	if n := index + 1 - p.first; index >= p.first && n <= uint64(len(p.logs)) {
		p.logs = append([]*Log(nil), p.logs[n:]...)
		p.first = index + 1
	}
	p.mu.Unlock()
}

func (p *pendingLogs) get(index uint64, out *Log) bool {
	if p == nil {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if index < p.first || index-p.first >= uint64(len(p.logs)) {
		return false
	}
	*out = *p.logs[index-p.first]
	return true
}

type appendReq struct {
	logs  []*Log
	flush chan error // answered once everything before it is written
}

// leaderAppender writes the leader's log on its own goroutine, in dispatch
// order, and counts the leader toward commitment only for what it wrote.
type leaderAppender struct {
	r          *Raft
	commitment *commitment
	commitCh   chan struct{}
	stepDown   chan struct{}
	pending    *pendingLogs
	reqCh      chan appendReq
	stopCh     chan struct{}
	doneCh     chan struct{}
	durable    atomic.Uint64 // last index written
	failed     atomic.Bool
}

func (r *Raft) startLeaderAppender() *leaderAppender {
	a := &leaderAppender{
		r:          r,
		commitment: r.leaderState.commitment,
		commitCh:   r.leaderState.commitCh,
		stepDown:   r.leaderState.stepDown,
		pending:    &pendingLogs{},
		reqCh:      make(chan appendReq, leaderAppendDepth),
		stopCh:     make(chan struct{}),
		doneCh:     make(chan struct{}),
	}
	a.durable.Store(r.getLastIndex())
	r.goFunc(a.run)
	return a
}

func (a *leaderAppender) run() {
	defer close(a.doneCh)
	max := a.r.config().MaxAppendEntries
	for {
		select {
		case <-a.stopCh:
			return
		default:
		}
		var req appendReq
		select {
		case req = <-a.reqCh:
		case <-a.stopCh:
			return
		}
		batch, flushes := req.logs, []chan error{req.flush}
	MORE:
		for len(batch) < max {
			select {
			case next := <-a.reqCh:
				batch = append(batch, next.logs...)
				flushes = append(flushes, next.flush)
			default:
				break MORE
			}
		}
		var err error
		switch {
		case a.failed.Load():
			err = errLeaderAppendFailed
		case len(batch) > 0:
			last := batch[len(batch)-1].Index
			a.r.tryStageCommitIndex(min(a.r.getCommitIndex(), last))
			if err = a.r.logs.StoreLogs(batch); err != nil {
				a.r.logger.Error("failed to write the leader's log, stepping down", "error", err)
				a.failed.Store(true)
				asyncNotifyCh(a.stepDown)
				break
			}
			a.pending.release(last)
			a.durable.Store(last)
			a.commitment.match(a.r.localID, last)
			asyncNotifyCh(a.commitCh) // the leader may apply up to last now
		}
		for _, f := range flushes {
			if f != nil {
				f <- err
			}
		}
	}
}

// append hands logs, already numbered and in pending, to the writer.
func (a *leaderAppender) append(logs []*Log) {
	select {
	case a.reqCh <- appendReq{logs: logs}:
	case <-a.r.shutdownCh:
	}
}

// flush waits until everything dispatched so far is written.
func (a *leaderAppender) flush() error {
	f := make(chan error, 1)
	select {
	case a.reqCh <- appendReq{flush: f}:
	case <-a.r.shutdownCh:
		return ErrRaftShutdown
	}
	select {
	case err := <-f:
		return err
	case <-a.r.shutdownCh:
		return ErrRaftShutdown
	}
}

// stopLeaderAppender ends this term's writer: the write under way
// completes, queued ones are dropped, and the last log is read back from
// the store, so that what follows as a follower or candidate sees only
// what is durable. It must be called on the main thread before the log is
// read or changed outside the leader's path.
func (r *Raft) stopLeaderAppender() {
	a := r.leaderState.appender
	if a == nil {
		return
	}
	r.leaderState.appender = nil
	close(a.stopCh)
	<-a.doneCh
	last, err := r.logs.LastIndex()
	if err != nil {
		panic(err) // as NewRaft: the log store cannot be read
	}
	var term uint64
	if last > 0 {
		var l Log
		if err := r.logs.GetLog(last, &l); err != nil {
			panic(err)
		}
		term = l.Term
	}
	r.setLastLog(last, term)
	if c := r.configurations; c.latestIndex > last && c.latestIndex > c.committedIndex {
		r.setLatestConfiguration(c.committed, c.committedIndex)
	}
}

// getLeaderLog reads entry index for replication: from this term's pending
// entries, else from the log store.
func (r *Raft) getLeaderLog(s *followerReplication, index uint64, out *Log) error {
	if s.pending.get(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}
