package client

import (
	"fmt"
	"sync"
)

// Fence is the resource side of fencing, for a resource written by holders
// of exclusive locks: it remembers the highest token it has accepted for
// each lock and refuses lower ones. A holder that was paused past its lease
// and wakes up with an old token is refused, even though it still believes
// it holds the lock.
//
// The pattern, in the resource's write path:
//
//	if err := fence.Admit(req.Lock, req.Token); err != nil {
//		return err // a newer holder has written since; this writer is stale
//	}
//	apply(req)
//
// Admit and apply must be atomic with respect to other writes (hold the
// resource's own mutex, or do both in one transaction), or a stale write can
// slip in between. A resource that keeps the highest token durably survives
// its own restarts too; Fence keeps it in memory. Tokens of shared holders
// granted at different times differ, so Fence is not for shared locks.
type Fence struct {
	mu      sync.Mutex
	highest map[string]uint64
}

// Admit accepts token for lock if it is at least the highest accepted so
// far (the same holder may write many times), and records it. Otherwise it
// returns an error wrapping ErrStaleToken.
func (f *Fence) Admit(lock string, token uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.highest == nil {
		f.highest = make(map[string]uint64)
	}
	if h := f.highest[lock]; token < h {
		return fmt.Errorf("%w: token %d for %q, but %d has been accepted", ErrStaleToken, token, lock, h)
	}
	f.highest[lock] = token
	return nil
}

// Highest returns the highest token accepted for lock (0 if none).
func (f *Fence) Highest(lock string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest[lock]
}
