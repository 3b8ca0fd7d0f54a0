package lease

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/lockd/lockd/api"
)

// TestSnapshotStore_LeavesNoTemporaryDirectories: the temporary directory
// of a snapshot that failed to begin is removed (hashicorp/raft keeps it),
// and so, at start, are those a crash left; other snapshots' are kept.
func TestSnapshotStore_LeavesNoTemporaryDirectories(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(dir, "snapshots")
	mk := func(name string) {
		if err := os.MkdirAll(filepath.Join(snaps, name), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(snaps, name)); return err == nil }
	mk("3-100-1700000000000.tmp") // a crash's leftover
	w := &storageWatch{log: slog.New(slog.DiscardHandler)}
	s, err := openSnapshotStore(dir, w, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if exists("3-100-1700000000000.tmp") {
		t.Fatal("a crash's temporary snapshot directory survived the start")
	}
	mk("5-200-1700000000001.tmp")                                                // what a failed Create of term 5, index 200 leaves
	mk("6-300-1700000000002.tmp")                                                // another snapshot's, in progress
	if _, err := s.Create(2, 200, 5, raft.Configuration{}, 1, nil); err == nil { // version 2 fails
		t.Fatal("Create of an unsupported version succeeded")
	}
	if exists("5-200-1700000000001.tmp") {
		t.Error("a failed snapshot's temporary directory survived")
	}
	if !exists("6-300-1700000000002.tmp") {
		t.Error("another snapshot's temporary directory was removed")
	}
	if w.failures.Load() != 1 || w.problem() == nil || w.problem().Reason != api.CodeStorageError {
		t.Errorf("a failed Create: %d failures, problem %+v; want 1, storage_error", w.failures.Load(), w.problem())
	}
	w.note(nil)
	if w.problem() != nil {
		t.Error("a successful write did not end the problem")
	}
}

func TestStoreOpenError_SaysWhatIsWrong(t *testing.T) {
	full := storeOpenError("d/raft.db", t.TempDir(), fmt.Errorf("write: %w", syscall.ENOSPC))
	locked := storeOpenError("d/raft.db", t.TempDir(), berrors.ErrTimeout)
	other := storeOpenError("d/raft.db", t.TempDir(), errors.New("bad magic"))
	for _, c := range []struct {
		err       error
		says, not string
	}{
		{full, "the disk holding the data dir is full", "another lockd"},
		{locked, "another lockd", "full"},
		{other, "bad magic", "another lockd"},
	} {
		msg := c.err.Error()
		if !strings.Contains(msg, c.says) || strings.Contains(msg, c.not) {
			t.Errorf("%q: want it to say %q and not %q", msg, c.says, c.not)
		}
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Error("the full-disk error does not wrap ENOSPC")
	}
}

// TestSnapshotStore_FlushesAsItWrites: the sink finds the file Raft
// writes the snapshot to and flushes it every snapshotSyncEvery bytes
// (were hashicorp/raft to move the file, the flushes would fail, and this
// would say so); the snapshot is whole and readable after Close.
func TestSnapshotStore_FlushesAsItWrites(t *testing.T) {
	dir := t.TempDir()
	w := &storageWatch{log: slog.New(slog.DiscardHandler)}
	s, err := openSnapshotStore(dir, w, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := s.Create(1, 200, 5, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := sink.(*watchedSink)
	chunk := make([]byte, 1<<20)
	for range snapshotSyncEvery/len(chunk) - 1 {
		if _, err := sink.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if k.file != nil {
		t.Fatal("flushed before snapshotSyncEvery bytes were written")
	}
	if _, err := sink.Write(chunk); err != nil {
		t.Fatal(err)
	}
	if k.file == nil || k.syncErr {
		t.Fatalf("no flush after %d bytes (file %v, failed %v): is %s the file Raft writes?", snapshotSyncEvery, k.file, k.syncErr, k.state)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if k.file != nil {
		t.Error("the sink's file for flushes stayed open after Close")
	}
	metas, err := s.List()
	if err != nil || len(metas) != 1 || metas[0].Size != snapshotSyncEvery {
		t.Fatalf("after Close: %v, %+v; want one snapshot of %d bytes", err, metas, snapshotSyncEvery)
	}
}
