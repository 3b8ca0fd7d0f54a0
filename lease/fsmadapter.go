package lease

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// raftFSM adapts fsm.FSM to raft.BatchingFSM: the state machine itself knows
// nothing of Raft.
type raftFSM struct {
	f *fsm.FSM
	// unsafe is what the unsafe switch ForgetGrant makes the node skip
	// when it replays its log; empty without the lockd_unsafe tag.
	unsafe unsafeReplay
	// snaps, if not nil, counts the snapshots Raft takes, for the
	// metrics.
	snaps *snapshotStats
}

var _ raft.BatchingFSM = raftFSM{}

// Apply applies one entry.
func (a raftFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if a.unsafe.forgets(l) {
		return fsm.Result{Index: l.Index}
	}
	return a.f.Apply(l.Index, l.Data)
}

// ApplyBatch applies committed entries in order; every result correlates
// with the entry at the same position.
func (a raftFSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = a.Apply(l)
	}
	return out
}

// Snapshot freezes the state on the FSM goroutine, at a cost that does not
// grow with the state (fsm.View); Persist streams it to the sink while
// Apply goes on.
func (a raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	s := &fsmSnapshot{v: a.f.View(), stats: a.snaps, start: time.Now()}
	if s.stats != nil {
		s.stats.inProgress.Add(1)
	}
	return s, nil
}

// Restore replaces the state with a snapshot's.
func (a raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return a.f.Restore(rc)
}

// fsmSnapshot is one snapshot from the freeze of the state (Snapshot, on
// Raft's FSM goroutine) until Raft releases it, after Persist or after a
// failure to open the sink.
type fsmSnapshot struct {
	v     *fsm.View
	stats *snapshotStats
	start time.Time
	once  sync.Once
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	n, err := s.v.WriteTo(sink)
	if err != nil {
		_ = sink.Cancel()
		s.end(0, false)
		return err
	}
	err = sink.Close()
	s.end(int(n), err == nil)
	return err
}

func (s *fsmSnapshot) Release() { s.end(0, false) }

// end counts the snapshot once: as persisted, with its size, if ok.
func (s *fsmSnapshot) end(size int, ok bool) {
	if s.stats == nil {
		return
	}
	s.once.Do(func() {
		s.stats.inProgress.Add(-1)
		if !ok {
			return
		}
		// The count last: a scrape that sees it sees the time too.
		d := time.Since(s.start)
		s.stats.nanos.Add(int64(d))
		s.stats.lastNanos.Store(int64(d))
		s.stats.lastBytes.Store(uint64(size)) //nolint:gosec // G115: a length
		s.stats.persisted.Add(1)
	})
}

// snapshotStats counts the snapshots Raft takes of the state (not the
// backups of GET /v1/snapshot), for the metrics: how many are under way
// (frozen, not yet persisted or given up), how many were persisted and
// the time they took from the freeze to the file's close, in all and the
// last one's, and the last one's size.
type snapshotStats struct {
	inProgress, nanos, lastNanos atomic.Int64
	persisted, lastBytes         atomic.Uint64
}
