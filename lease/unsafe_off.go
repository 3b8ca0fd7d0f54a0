//go:build !lockd_unsafe

package lease

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
)

// A default build (without the lockd_unsafe tag) has no unsafe switches:
// Config has no field Unsafe, and every hook below is a constant or the
// identity, which the compiler inlines and folds away, so that no binary
// built for production can be started with a guarantee off. The switches
// and what they do are in unsafe_on.go, built only for the fault harness.

type (
	unsafeConfig struct{}
	unsafeState  struct{}
	unsafeTerm   struct{}
	unsafeReplay struct{}
)

func (*Node) unsafeSetUp()                                         {}
func (*Node) unsafeDeposedServing() bool                           { return false }
func (*Node) unsafeStaleReads() bool                               { return false }
func (*Node) unsafeNoSessionGrace() bool                           { return false }
func (*Node) unsafeSkipWaiter() bool                               { return false }
func (*Node) unsafeKeepsServing(*leaderTerm) bool                  { return false }
func (*Node) unsafeLeaseEnd(until time.Time) time.Time             { return until }
func (*leaderTerm) unsafeDeposedValid() (valid, on bool)           { return false, false }
func (*Node) unsafeSessionTTL(ttl time.Duration) time.Duration     { return ttl }
func (*Node) unsafeKeepaliveWrite(context.Context) error           { return nil }
func (*Node) unsafeStaleLock(_ string, l api.Lock) api.Lock        { return l }
func (*Node) unsafeObserved(_ string, e api.Election) api.Election { return e }
func (unsafeReplay) forgets(*raft.Log) bool                        { return false }
func (*Node) unsafeWatchEvents(events []api.Event) []api.Event     { return events }

func (*raftEngine) unsafeReplay(raft.LogStore) (unsafeReplay, error) { return unsafeReplay{}, nil }

func (*raftEngine) unsafeRoundLease(time.Time) (until time.Time, on bool, err error) {
	return time.Time{}, false, nil
}
