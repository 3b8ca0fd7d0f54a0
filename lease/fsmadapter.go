package lease

import (
	"io"

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
// grow with the state (fsm.View); Persist encodes and writes it while
// Apply goes on.
func (a raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return fsmSnapshot{a.f.View()}, nil
}

// Restore replaces the state with a snapshot's.
func (a raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return a.f.Restore(rc)
}

type fsmSnapshot struct{ v *fsm.View }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := s.v.Marshal()
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() {}
