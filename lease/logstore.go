package lease

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	bolt "go.etcd.io/bbolt"
)

// logStore is what Raft keeps its log and its stable state (term, vote)
// in; both kinds lockd offers are also the node's own stable store.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// Where each kind of store lives in the data dir.
const (
	boltFile = "raft.db"
	walDir   = "wal"
)

// openLogStore opens the data dir's log store of the given kind; auto (or
// empty) is the kind the data dir holds, or wal in a new one. A data dir
// that already holds the other kind is refused: switching stores would
// start the node with an empty log and no vote, as if its disk had been
// wiped, which breaks Raft's promises.
func openLogStore(dir, kind string) (logStore, error) {
	boltPath, walPath := filepath.Join(dir, boltFile), filepath.Join(dir, walDir)
	if kind == "" || kind == LogStoreAuto {
		kind = LogStoreWAL
		if _, err := os.Stat(boltPath); err == nil {
			kind = LogStoreBolt
		}
	}
	mine, other := boltPath, walPath
	if kind == LogStoreWAL {
		mine, other = walPath, boltPath
	}
	if _, err := os.Stat(other); err == nil {
		return nil, fmt.Errorf("lease: %s holds a log store of the other kind (%s); this node was started with --log-store %s: "+
			"start it with the store it was created with", dir, other, kind)
	}
	switch kind {
	case LogStoreWAL:
		if err := os.MkdirAll(walPath, 0o750); err != nil {
			return nil, storeOpenError(walPath, dir, err)
		}
		w, err := wal.Open(walPath)
		if err != nil {
			return nil, storeOpenError(mine, dir, err)
		}
		return w, nil
	default:
		s, err := raftboltdb.New(raftboltdb.Options{Path: boltPath, BoltOptions: &bolt.Options{Timeout: 2 * time.Second}})
		if err != nil {
			return nil, storeOpenError(mine, dir, err)
		}
		return s, nil
	}
}

// isNotFound reports whether err is a stable store's "no such key".
func isNotFound(err error) bool {
	return errors.Is(err, raftboltdb.ErrKeyNotFound) || errors.Is(err, wal.ErrNotFound)
}
