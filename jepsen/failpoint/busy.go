package failpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/client"
)

// busy keeps one node's log busy with writes of its own, outside the
// locks the checkers read: through a client that knows only that node, it
// takes and releases busyLocks locks of its own, starting one operation
// every busyEvery on the next lock that has none in flight. The starts are
// paced by the clock, not by the answers: writers that each waited for
// their last answer would all be released by the same commit and write
// again together, and the node's appends would reach its followers in
// bursts. Paced, they reach each follower one after another.
type busy struct {
	stopLoad context.CancelFunc
	wg       sync.WaitGroup
	session  *client.Session
	writes   atomic.Int64 // acknowledged
}

const (
	busyLocks = 32
	busyEvery = 10 * time.Millisecond
)

// startBusy starts writing through the node at url; ttl is the TTL of the
// writes' session.
func startBusy(url string, ttl time.Duration) *busy {
	ctx, cancel := context.WithCancel(context.Background())
	b := &busy{stopLoad: cancel}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.run(ctx, url, ttl)
	}()
	return b
}

func (b *busy) run(ctx context.Context, url string, ttl time.Duration) {
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{url},
		RequestTimeout: time.Second, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	s, err := client.NewSession(sctx, c, client.WithTTL(ttl), client.WithLockDelay(0), client.WithName("jepsen-busy"))
	cancel()
	if err != nil {
		return
	}
	b.session = s
	var locks [busyLocks]struct {
		m        *client.Mutex
		inFlight atomic.Bool
	}
	for i := range locks {
		locks[i].m = client.NewMutex(s, fmt.Sprintf("jepsen/busy/%d", i))
	}
	tick := time.NewTicker(busyEvery)
	defer tick.Stop()
	for i := 0; ; i = (i + 1) % busyLocks {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l := &locks[i]
		if !l.inFlight.CompareAndSwap(false, true) {
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer l.inFlight.Store(false)
			octx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var err error
			if l.m.Held() {
				err = l.m.Unlock(octx)
			} else {
				err = l.m.TryLock(octx)
			}
			if err == nil {
				b.writes.Add(1)
			}
		}()
	}
}

// stop ends the writes; their requests still in flight are abandoned.
func (b *busy) stop() {
	if b == nil {
		return
	}
	b.stopLoad()
	b.wg.Wait()
}

// close stops the writes and ends their session (within 5 s).
func (b *busy) close() {
	if b == nil {
		return
	}
	b.stop()
	if b.session != nil {
		_ = b.session.Close()
	}
}

// acknowledged is how many of the writes the node acknowledged.
func (b *busy) acknowledged() int64 {
	if b == nil {
		return 0
	}
	return b.writes.Load()
}
