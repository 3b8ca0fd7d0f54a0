package lease

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

var errStoreClosed = errors.New("lease: store closed")

// stableStore guards Raft's stable store across Close. hashicorp/raft
// answers heartbeats on the transport's goroutines, and one that passed
// Raft's shutdown check just before Shutdown can still write the current
// term afterwards; Raft panics if that write fails. Writes after close are
// therefore dropped silently: for the cluster that is the same as the node
// crashing just before the write, which Raft is built to survive. Close
// waits for writes in flight.
type stableStore struct {
	mu     sync.RWMutex
	closed bool
	s      raft.StableStore
}

func (g *stableStore) Set(key, val []byte) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.Set(key, val)
}

func (g *stableStore) Get(key []byte) ([]byte, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, errStoreClosed
	}
	return g.s.Get(key)
}

func (g *stableStore) SetUint64(key []byte, val uint64) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.SetUint64(key, val)
}

func (g *stableStore) GetUint64(key []byte) (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return 0, errStoreClosed
	}
	return g.s.GetUint64(key)
}

// close makes later writes no-ops, after the ones in flight.
func (g *stableStore) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
