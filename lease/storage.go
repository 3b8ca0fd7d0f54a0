package lease

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/lockd/lockd/api"
)

// storageWatch records how the node's writes to its data dir go: Raft's
// log and stable store, and snapshots. A write that fails makes the node's
// storage faulty until a later write succeeds; the node then says so in
// GET /v1/cluster (storage_problem), /readyz (503 storage_full or
// storage_error) and its metrics, and logs the change once each way. A
// full disk is the failure an operator meets most: Raft steps the leader
// down when it cannot append, and clients see only no_leader.
type storageWatch struct {
	log      *slog.Logger
	failures atomic.Uint64
	failing  atomic.Bool // err != nil: a success need not take mu

	mu    sync.Mutex
	err   error     // the last write error; nil once a write succeeded after it
	since time.Time // when the writes began to fail
}

// note records the outcome of one write.
func (w *storageWatch) note(err error) {
	if err == nil {
		if !w.failing.Load() {
			return
		}
		w.mu.Lock()
		was, since := w.err, w.since
		w.err = nil
		w.failing.Store(false)
		w.mu.Unlock()
		if was != nil {
			w.log.Info("writes to the data dir succeed again", "failed_since", since)
		}
		return
	}
	if errors.Is(err, errStoreClosed) || errors.Is(err, raft.ErrLogNotFound) {
		return // not the disk's doing
	}
	w.failures.Add(1)
	w.mu.Lock()
	first := w.err == nil
	w.err = err
	w.failing.Store(true)
	if first {
		w.since = time.Now()
	}
	w.mu.Unlock()
	if first {
		if diskFull(err) {
			w.log.Error("the disk holding the data dir is full: writes fail, and this node cannot lead or follow until space is freed", "err", err)
		} else {
			w.log.Error("writes to the data dir fail", "err", err)
		}
	}
}

// problem describes the storage's fault, or returns nil.
func (w *storageWatch) problem() *api.StorageProblem {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	p := &api.StorageProblem{Reason: api.CodeStorageError, Error: w.err.Error(), Since: w.since}
	if diskFull(w.err) {
		p.Reason = api.CodeStorageFull
	}
	return p
}

// full reports whether the last write failed for want of space.
func (w *storageWatch) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil && diskFull(w.err)
}

// diskFull reports whether err says the disk (or the user's quota) is full.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// storeOpenError explains why a store in dir could not be opened: a full
// disk says so, with the space left; a lock held elsewhere asks whether
// another lockd uses the data dir.
func storeOpenError(path, dir string, err error) error {
	switch {
	case diskFull(err):
		return fmt.Errorf("lease: open %s: %w: the disk holding the data dir is full (%s); free space or give the node another data dir",
			path, err, freeSpace(dir))
	case errors.Is(err, berrors.ErrTimeout), errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("lease: open %s: %w (is another lockd using this data dir?)", path, err)
	}
	return fmt.Errorf("lease: open %s: %w", path, err)
}

// explainDiskFull adds to a start-up error caused by a full disk what the
// operator needs to know, unless storeOpenError already did.
func explainDiskFull(dir string, err error) error {
	if !diskFull(err) || strings.Contains(err.Error(), "disk holding the data dir is full") {
		return err
	}
	return fmt.Errorf("%w: the disk holding the data dir is full (%s); free space or give the node another data dir", err, freeSpace(dir))
}

// freeSpace says how much space the file system holding dir has left.
func freeSpace(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return "free space unknown"
	}
	return fmt.Sprintf("%d bytes free of %d", st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize)) //nolint:gosec // G115: a block size is positive
}

// watchedLogs is a log store whose writes report to a storageWatch.
type watchedLogs struct {
	logStore
	w *storageWatch
}

func (s watchedLogs) StoreLog(l *raft.Log) error {
	err := s.logStore.StoreLog(l)
	s.w.note(err)
	return err
}

func (s watchedLogs) StoreLogs(ls []*raft.Log) error {
	err := s.logStore.StoreLogs(ls)
	s.w.note(err)
	return err
}

func (s watchedLogs) Set(k, v []byte) error {
	err := s.logStore.Set(k, v)
	s.w.note(err)
	return err
}

func (s watchedLogs) SetUint64(k []byte, v uint64) error {
	err := s.logStore.SetUint64(k, v)
	s.w.note(err)
	return err
}

// snapshotStore is Raft's file snapshot store, whose writes report to a
// storageWatch, and which leaves no temporary directory behind a snapshot
// it failed to begin (hashicorp/raft's Create returns its error and keeps
// the directory it made) nor, at start, behind one a crash interrupted.
type snapshotStore struct {
	*raft.FileSnapshotStore
	dir string // where the snapshots are
	w   *storageWatch
}

// openSnapshotStore opens the snapshot store in dataDir, retaining two
// snapshots, and removes what interrupted snapshots left.
func openSnapshotStore(dataDir string, w *storageWatch, hl hclog.Logger) (*snapshotStore, error) {
	fs, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hl)
	if err != nil {
		return nil, err
	}
	s := &snapshotStore{FileSnapshotStore: fs, dir: filepath.Join(dataDir, "snapshots"), w: w}
	if n := s.removeTemporary(""); n > 0 {
		w.log.Warn("removed the temporary directories that interrupted snapshots left", "directories", n, "dir", s.dir)
	}
	return s, nil
}

// removeTemporary removes the temporary directories of snapshots whose
// name begins with prefix, and returns how many it removed.
func (s *snapshotStore) removeTemporary(prefix string) int {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".tmp") && strings.HasPrefix(e.Name(), prefix) {
			if os.RemoveAll(filepath.Join(s.dir, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}

func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, c raft.Configuration, ci uint64, t raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, c, ci, t)
	if err != nil {
		s.w.note(err)
		// Raft names a snapshot term-index-milliseconds.
		s.removeTemporary(fmt.Sprintf("%d-%d-", term, index))
		return nil, err
	}
	// hashicorp/raft writes a snapshot to NAME.tmp/state.bin.
	state := filepath.Join(s.dir, sink.ID()+".tmp", "state.bin")
	return &watchedSink{SnapshotSink: sink, w: s.w, state: state}, nil
}

// snapshotSyncEvery is how much of a snapshot is written between two
// flushes of its file to disk.
const snapshotSyncEvery = 4 << 20

// watchedSink reports a snapshot's write errors to a storageWatch, and
// flushes the snapshot's file to disk every snapshotSyncEvery bytes as it
// is written. Raft syncs the file once, when it closes the sink; left to
// that one sync, a snapshot of hundreds of MiB goes to disk all at once,
// and the disk's queue holds the small syncs of the Raft log behind it for
// as long (hundreds of ms on this project's test machines: puts stalled,
// and a leader could miss its lease renewals). Flushed as it goes, each
// flush is a few ms, and the log's syncs pass between them.
type watchedSink struct {
	raft.SnapshotSink
	w        *storageWatch
	state    string   // the file the sink writes
	file     *os.File // state, opened to sync it; nil until the first sync
	unsynced int
	syncErr  bool // a sync failed: stop trying (Raft's own sync decides)
}

func (k *watchedSink) Write(p []byte) (int, error) {
	n, err := k.SnapshotSink.Write(p)
	if err != nil {
		k.w.note(err)
		return n, err
	}
	if k.unsynced += n; k.unsynced >= snapshotSyncEvery {
		k.unsynced = 0
		k.sync()
	}
	return n, nil
}

// sync flushes what has reached the snapshot's file so far. A failure is
// logged once and ends the early flushes; it is not the snapshot's
// failure, which Raft's sync at Close decides.
func (k *watchedSink) sync() {
	if k.syncErr {
		return
	}
	var err error
	if k.file == nil {
		k.file, err = os.Open(k.state)
	}
	if err == nil {
		err = k.file.Sync()
	}
	if err != nil {
		k.syncErr = true
		k.w.log.Warn("could not flush a snapshot as it was written; it is flushed once at its end", "file", k.state, "err", err)
	}
}

func (k *watchedSink) closeFile() {
	if k.file != nil {
		_ = k.file.Close()
		k.file = nil
	}
}

func (k *watchedSink) Close() error {
	k.closeFile()
	err := k.SnapshotSink.Close()
	k.w.note(err)
	return err
}

func (k *watchedSink) Cancel() error {
	k.closeFile()
	return k.SnapshotSink.Cancel()
}
