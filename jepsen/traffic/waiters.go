package traffic

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// QueueLock is the lock the queue workers take with blocking acquires, so
// that waiters queue and each release hands the lock to the next.
const QueueLock = "jepsen/q0"

// SharedLock is the lock the shared workers take, mostly in shared mode.
const SharedLock = "jepsen/s0"

// queueWait is how long a queue worker waits for its turn before it gives
// up (and, the outcome being unknown then, ends its session).
const queueWait = 3 * time.Second

// queueWorker takes QueueLock with blocking acquires, holds it briefly and
// releases it. A blocking acquire whose outcome is unknown (given up,
// cut off) may leave the session queued or granted behind the client's
// back, so the worker ends that session and starts a fresh one.
func (t *Traffic) queueWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.lockToken, []string{QueueLock}, rng)
	defer w.endSession()
	for sleep(ctx, jitter(rng, 5*time.Millisecond, 40*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		m := client.NewMutex(s, QueueLock)
		tok, ok := w.acquireWith(ctx, m, QueueLock, "", queueWait)
		if !ok {
			if s.Alive() && ctx.Err() == nil {
				w.endSession()
			}
			continue
		}
		if t.sawQueued(s.ID()) {
			t.count("hand-offs")
		}
		if !sleep(ctx, jitter(rng, 30*time.Millisecond, 200*time.Millisecond)) {
			w.release(context.WithoutCancel(ctx), m)
			break
		}
		if rng.IntN(4) == 0 {
			w.check(ctx, QueueLock, tok)
		}
		w.release(ctx, m)
	}
}

// sharedWorker takes SharedLock with try acquires, in shared mode three
// times in four and exclusive otherwise, checks its token sometimes, and
// releases it.
func (t *Traffic) sharedWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.lockToken, []string{SharedLock}, rng)
	defer w.endSession()
	for sleep(ctx, jitter(rng, 10*time.Millisecond, 60*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		mode := api.ModeShared
		var opts []client.MutexOption
		if rng.IntN(4) == 0 {
			mode = api.ModeExclusive
		} else {
			opts = append(opts, client.Shared())
		}
		m := client.NewMutex(s, SharedLock, opts...)
		tok, ok := w.acquireWith(ctx, m, SharedLock, mode, 0)
		if !ok {
			continue
		}
		if !sleep(ctx, jitter(rng, 20*time.Millisecond, 150*time.Millisecond)) {
			w.release(context.WithoutCancel(ctx), m)
			break
		}
		if rng.IntN(3) == 0 {
			w.check(ctx, SharedLock, tok)
		}
		w.release(ctx, m)
	}
}

// queueReader reads the locks that have queues, shared holders or
// lock-delays, with
// default consistency, and records the holder and the queue it saw; the
// fifo checker orders waiters by these reads.
func (t *Traffic) queueReader(ctx context.Context, rng *rand.Rand) {
	c := t.newClient(t.nextClient(), t.lockToken)
	id := t.nextClient()
	names := append([]string{QueueLock, QueueLock, QueueLock, SharedLock}, DelayLocks...)
	for sleep(ctx, jitter(rng, 5*time.Millisecond, 25*time.Millisecond)) {
		t.count("read")
		t.readLock(ctx, c, history.Op{Client: id, Lock: names[rng.IntN(len(names))]}, client.Default, func(op *history.Op, lk api.Lock) {
			for _, wt := range lk.Waiters {
				op.Waiters = append(op.Waiters, wt.Session)
				t.noteQueued(wt.Session)
			}
			if len(op.Waiters) > 1 {
				t.count("queue reads")
			}
		})
	}
}

// noteQueued remembers that a read saw session queued.
func (t *Traffic) noteQueued(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queued == nil {
		t.queued = map[string]bool{}
	}
	t.queued[session] = true
}

// sawQueued reports, once, whether a read saw session queued; a grant
// after that was a hand-off.
func (t *Traffic) sawQueued(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ok := t.queued[session]
	delete(t.queued, session)
	return ok
}
