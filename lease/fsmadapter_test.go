package lease

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// bufSink is a raft.SnapshotSink that keeps what it is given.
type bufSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *bufSink) Close() error  { s.closed = true; return nil }
func (s *bufSink) ID() string    { return "test" }
func (s *bufSink) Cancel() error { s.cancelled = true; return nil }

// Raft takes a snapshot on its FSM goroutine and persists it later, while
// entries go on applying: what Persist writes is the state when Snapshot
// was called, and it restores to that state.
func TestRaftFSM_PersistWritesTheStateAsOfSnapshot(t *testing.T) {
	a := raftFSM{f: fsm.New()}
	now := time.Unix(1000, 0)
	index := uint64(0)
	apply := func(c fsm.Command) {
		t.Helper()
		c.Now = now
		data, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		index++
		if res := a.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(fsm.Result); res.Err != nil {
			t.Fatalf("%v: %v", c.Op, res.Err)
		}
	}
	apply(fsm.Command{Op: fsm.OpCreateSession, Session: "s", TTL: time.Minute})
	apply(fsm.Command{Op: fsm.OpAcquire, Session: "s", Name: "a", Seq: 1})
	want, err := a.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	apply(fsm.Command{Op: fsm.OpLetGo, Session: "s", Name: "a", Seq: 2})
	apply(fsm.Command{Op: fsm.OpCreateSession, Session: "t", TTL: time.Minute})
	apply(fsm.Command{Op: fsm.OpCampaign, Session: "t", Name: "e", Value: "v"})
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("persist: %v (closed %v, cancelled %v)", err, sink.closed, sink.cancelled)
	}
	snap.Release()
	if !bytes.Equal(sink.Bytes(), want) {
		t.Fatalf("persisted\n%s\nwant the state at the snapshot\n%s", sink.Bytes(), want)
	}
	b := raftFSM{f: fsm.New()}
	if err := b.Restore(readCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if l := b.f.Lock("a"); len(l.Holders) != 1 || b.f.AppliedIndex() != 2 {
		t.Fatalf("restored: lock a %+v at index %d", l, b.f.AppliedIndex())
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// The metrics count a snapshot from the freeze of the state until Raft
// releases it: in progress meanwhile, persisted once with its size; one
// given up before Persist (its sink could not be made) is not counted.
func TestRaftFSM_SnapshotsCounted(t *testing.T) {
	var st snapshotStats
	a := raftFSM{f: fsm.New(), snaps: &st}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if st.inProgress.Load() != 1 || st.persisted.Load() != 0 {
		t.Fatalf("after the freeze: %d in progress, %d persisted", st.inProgress.Load(), st.persisted.Load())
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if st.inProgress.Load() != 0 || st.persisted.Load() != 1 || st.lastBytes.Load() != uint64(sink.Len()) ||
		st.lastNanos.Load() <= 0 || st.nanos.Load() != st.lastNanos.Load() {
		t.Fatalf("after Persist: %d in progress, %d persisted, last %d bytes (wrote %d) in %d ns, %d ns in all",
			st.inProgress.Load(), st.persisted.Load(), st.lastBytes.Load(), sink.Len(), st.lastNanos.Load(), st.nanos.Load())
	}
	given, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	given.Release()
	given.Release()
	if st.inProgress.Load() != 0 || st.persisted.Load() != 1 {
		t.Fatalf("after a snapshot given up: %d in progress, %d persisted", st.inProgress.Load(), st.persisted.Load())
	}
}
