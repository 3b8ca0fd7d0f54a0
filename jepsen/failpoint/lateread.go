package failpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// readerClient numbers the schedule's own reader in the history, apart
// from the workers'.
const readerClient = 1 << 20

// fastReads reads the lock workload's locks from one node, one read after
// another with no pause, until stopped, and records each read in the
// history like the workload's per-node readers do. The window in which an
// old leader may answer from a lease that outlived a follower's promise
// lasts tens of milliseconds; the per-node readers, one read every 10-40 ms
// over three locks, would mostly miss it.
type fastReads struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	n      int
}

func startFastReads(rec *history.Recorder, access traffic.Access, url, nodeID string) *fastReads {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fastReads{cancel: cancel}
	c, err := access.Client(client.Config{Endpoints: []string{url},
		RequestTimeout: 200 * time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		return f
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		locks := append([]string{lateLock}, traffic.LockNames...)
		for i := 0; ctx.Err() == nil; i++ {
			l := locks[i%len(locks)]
			op := rec.Invoke(history.Op{Client: readerClient, Lock: l, Kind: history.Read, Node: nodeID})
			octx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			lk, err := c.Lock(octx, l, client.Default)
			cancel()
			st := history.Fail // a read changes nothing: one that failed is left out
			if err == nil {
				st = history.OK
				if len(lk.Holders) > 0 {
					op.Holder, op.Token = lk.Holders[0].Session, lk.Holders[0].Token
				}
				f.n++
			}
			rec.Complete(op, st)
			pause := time.Millisecond
			if st != history.OK {
				pause = 10 * time.Millisecond
			}
			if !wait(ctx, pause) {
				break
			}
		}
	}()
	return f
}

// stop ends the reads and returns how many the node answered.
func (f *fastReads) stop() int {
	if f == nil {
		return 0
	}
	f.cancel()
	f.wg.Wait()
	return f.n
}

// lateLock is the lock the schedule itself writes and reads: its history
// holds only the schedule's operations.
const lateLock = "jepsen/late"

// writer takes lateLock through the new leader the moment it is seen, so
// that a write is acknowledged as early as the new leader allows; reads
// the old leader answers after that with the lock still free are stale.
// Its session is made before the cut, through the followers.
type writer struct {
	rec   *history.Recorder
	s     *client.Session
	m     *client.Mutex
	drift float64 // the nodes' clock-drift bound (traffic.DriftBound)
}

// newWriter opens the writer's session through urls (the followers).
func newWriter(ctx context.Context, rec *history.Recorder, access traffic.Access, urls []string, ttl time.Duration, drift float64) (*writer, error) {
	c, err := access.Client(client.Config{Endpoints: urls,
		RequestTimeout: 500 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := client.NewSession(sctx, c, client.WithTTL(ttl), client.WithLockDelay(0), client.WithName("jepsen-late"))
	if err != nil {
		return nil, err
	}
	return &writer{rec: rec, s: s, m: client.NewMutex(s, lateLock), drift: drift}, nil
}

// acquire records a try acquire of lateLock.
func (w *writer) acquire(ctx context.Context) {
	op := w.rec.Invoke(history.Op{Client: readerClient + 1, Lock: lateLock, Kind: history.Acquire, Session: w.s.ID()})
	octx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := w.m.TryLock(octx)
	cancel()
	st := history.Unknown // granted or not: an acquire whose answer was lost may still land
	if err == nil && w.m.Token() != 0 {
		st, op.Token = history.OK, w.m.Token()
	} else if err != nil {
		op.Err = err.Error()
	}
	w.rec.Complete(op, st)
}

// close releases lateLock and ends the session, recording both.
func (w *writer) close() {
	if w == nil {
		return
	}
	if w.s.Alive() && w.m.Held() {
		op := w.rec.Invoke(history.Op{Client: readerClient + 1, Lock: lateLock, Kind: history.Release, Session: w.s.ID()})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := w.m.Unlock(ctx)
		cancel()
		st := history.OK
		if err != nil {
			st, op.Err = history.Unknown, err.Error()
		}
		w.rec.Complete(op, st)
	}
	end := history.Op{Client: readerClient + 1, Lock: lateLock, Kind: history.End, Session: w.s.ID()}
	if !w.s.Alive() {
		// Lost: the server may expire it from its promise on.
		promise := traffic.ServerPromise(w.s, w.drift)
		end.Status, end.Call, end.Return, end.Err = history.Unknown, w.rec.At(promise), history.Infinity, "expired"
		time.Sleep(time.Until(promise)) // the destroy must not land before the End
		w.s.Close()
		w.rec.Add(end)
		return
	}
	end.Call = min(w.rec.Now(), w.rec.At(traffic.ServerPromise(w.s, w.drift)))
	err := w.s.Close()
	end.Status, end.Return = history.OK, w.rec.Now()
	if err != nil {
		end.Status, end.Return, end.Err = history.Unknown, history.Infinity, err.Error()
	}
	w.rec.Add(end)
}

// writeLoad keeps one node busy confirming its leadership with answers
// that stream in: it writes through a client that knows only that node,
// outside the checked history, taking and releasing loadLocks locks of its
// own, starting one operation every loadEvery on the next lock with none
// in flight. The starts are paced by the clock, not by the answers:
// writers that each waited for their last answer would all be released by
// the same commit and write again together, and the node's appends would
// reach its followers in bursts. A reader of its own asks the node for
// consistent reads one after another, so that the node starts a lease
// round the moment the one before it ends.
type writeLoad struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	session *client.Session
	writes  atomic.Int64 // acknowledged
}

const (
	loadLocks = 32
	loadEvery = 5 * time.Millisecond
)

// startWriteLoad opens a session through url and starts the writes and
// the consistent reads; ttl is the session's TTL.
func startWriteLoad(ctx context.Context, access traffic.Access, url string, ttl time.Duration) (*writeLoad, error) {
	c, err := access.Client(client.Config{Endpoints: []string{url},
		RequestTimeout: time.Second, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	s, err := client.NewSession(sctx, c, client.WithTTL(ttl), client.WithLockDelay(0), client.WithName("jepsen-load"))
	cancel()
	if err != nil {
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	w := &writeLoad{cancel: stop, session: s}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		w.write(lctx, s)
	}()
	go func() {
		defer w.wg.Done()
		for lctx.Err() == nil {
			octx, cancel := context.WithTimeout(lctx, 300*time.Millisecond)
			_, err := c.Lock(octx, "jepsen/load/0", client.Consistent)
			cancel()
			pause := time.Millisecond
			if err != nil {
				pause = 10 * time.Millisecond
			}
			if !wait(lctx, pause) {
				return
			}
		}
	}()
	return w, nil
}

func (w *writeLoad) write(ctx context.Context, s *client.Session) {
	var locks [loadLocks]struct {
		m        *client.Mutex
		inFlight atomic.Bool
	}
	for i := range locks {
		locks[i].m = client.NewMutex(s, fmt.Sprintf("jepsen/load/%d", i))
	}
	tick := time.NewTicker(loadEvery)
	defer tick.Stop()
	for i := 0; ; i = (i + 1) % loadLocks {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l := &locks[i]
		if !l.inFlight.CompareAndSwap(false, true) {
			continue
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
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
				w.writes.Add(1)
			}
		}()
	}
}

// stop ends the writes and reads (those in flight are abandoned) and
// returns how many writes the node acknowledged.
func (w *writeLoad) stop() int64 {
	if w == nil {
		return 0
	}
	w.cancel()
	w.wg.Wait()
	return w.writes.Load()
}

// close stops the load and ends its session.
func (w *writeLoad) close() {
	if w == nil {
		return
	}
	w.stop()
	_ = w.session.Close()
}
