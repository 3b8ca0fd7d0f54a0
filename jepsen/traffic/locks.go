package traffic

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// opTimeout bounds one operation of a worker.
const opTimeout = 2 * time.Second

// lockWorker takes, checks and releases the locks of LockNames with try
// acquires (a blocking acquire cut off by a timeout would release behind
// the history's back).
func (t *Traffic) lockWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.lockToken, LockNames, rng)
	defer w.endSession()
	var m *client.Mutex
	var lastToken uint64
	for ctx.Err() == nil {
		if !sleep(ctx, jitter(rng, 5*time.Millisecond, 60*time.Millisecond)) {
			break
		}
		s := w.session(ctx)
		if s == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if m != nil && !m.Held() {
			m = nil
		}
		switch r := rng.Float64(); {
		case m == nil:
			l := LockNames[rng.IntN(len(LockNames))]
			nm := client.NewMutex(s, l)
			if tok, ok := w.acquire(ctx, nm, l); ok {
				m, lastToken = nm, tok
			}
		case r < 0.3:
			w.release(ctx, m)
			m = nil
		case r < 0.55:
			tok := lastToken
			if rng.IntN(3) == 0 && tok > 1 {
				tok = uint64(rng.Int64N(int64(tok))) //nolint:gosec // G115: tokens stay far below 2^63; this picks some old or foreign token
			}
			w.check(ctx, m.Name(), tok)
		}
	}
}

// acquire records a try acquire of lock by m.
func (w *worker) acquire(ctx context.Context, m *client.Mutex, lock string) (uint64, bool) {
	return w.acquireWith(ctx, m, lock, "", 0)
}

// acquireWith records an acquire of lock by m in mode ("" for exclusive):
// a try when wait is 0, else a blocking acquire that queues for up to
// wait. The blocking one has no deadline the library could turn into its
// own wait: it asks the server to queue for the API's longest wait, and
// the worker gives up by cancelling after wait (the outcome is unknown, and
// the library's give-back takes the session out of the queue, or releases
// what it was granted meanwhile). So it is one request, one
// place in the queue, kept by the library's retries, and never re-queued
// at the back by the library after a wait the server ended.
func (w *worker) acquireWith(ctx context.Context, m *client.Mutex, lock, mode string, wait time.Duration) (uint64, bool) {
	s := w.s
	if !s.Alive() {
		return 0, false
	}
	leave, ok := w.t.gate.pass(ctx)
	defer leave()
	if !ok {
		return 0, false
	}
	rec := w.t.rec
	w.t.count("acquire")
	// The library waits no longer than ctx allows (the run's end), and a
	// server that answers lock_held when that shorter wait ran out is
	// right: the history records the wait the server was given.
	if dl, ok := ctx.Deadline(); ok && wait > 0 {
		wait = max(min(wait, time.Until(dl)), time.Millisecond)
	}
	op := rec.Invoke(history.Op{Client: w.id, Lock: lock, Kind: history.Acquire, Session: s.ID(), Mode: mode, Wait: wait})
	var err error
	var gaveUp atomic.Int64 // when the worker cancelled a blocking acquire (0: it did not)
	if wait == 0 {
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		err = m.TryLock(octx)
		cancel()
	} else {
		octx, cancel := context.WithCancel(ctx)
		stop := time.AfterFunc(wait, func() { gaveUp.Store(rec.Now()); cancel() })
		err = m.Lock(octx)
		stop.Stop()
		cancel()
	}
	st, code := status(err)
	op.Code, op.Err = code, errString(err)
	if st == history.OK {
		op.Token = m.Token()
		if op.Token == 0 { // lost at once: granted, but with what token we cannot say
			st = history.Unknown
		}
	}
	rec.Complete(op, st)
	if err != nil && st == history.Unknown {
		gb := op
		if at := gaveUp.Load(); at != 0 && errors.Is(err, context.Canceled) && ctx.Err() == nil {
			// The request failed because the worker gave up: the library
			// sends its give-back only after that (the queue checker
			// counts the waiter queued until then).
			gb.Call = at
		}
		recordGiveBack(rec, gb)
	}
	if code == api.CodeLockDelay {
		w.t.count("lock-delay refusals")
	}
	if st != history.OK {
		return 0, false
	}
	if mode == api.ModeShared {
		w.t.count("shared grants")
	}
	w.watchHoldMode(ctx, lock, op.Token, m.Lost(), s, mode == api.ModeShared)
	return op.Token, true
}

// recordGiveBack records the release (or resign) the client library sends
// on its own after an acquire (or campaign) of unknown outcome, to give back
// what it may have been granted: without it in the history, the lock going
// free would look like a release nobody asked for. The library may send it
// before the acquire returns (or in the background once its context ended),
// so its invocation is the acquire's own (acquire.Call: callers may pass a
// later one when they know the library's request failed no earlier), and
// its outcome is unknown.
func recordGiveBack(rec *history.Recorder, acquire history.Op) {
	rec.Add(history.Op{Client: acquire.Client, Lock: acquire.Lock, Kind: history.Release, Session: acquire.Session,
		Err: "the library's give-back after an acquire of unknown outcome", Status: history.Unknown,
		Call: acquire.Call, Return: history.Infinity})
}

// release records m.Unlock.
func (w *worker) release(ctx context.Context, m *client.Mutex) {
	leave := w.t.gate.passSoon(ctx)
	defer leave()
	rec := w.t.rec
	w.t.count("release")
	op := rec.Invoke(history.Op{Client: w.id, Lock: m.Name(), Kind: history.Release, Session: w.s.ID()})
	w.giveUp(m.Name(), op.Call)
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	err := m.Unlock(octx)
	cancel()
	st, code := status(err)
	op.Code, op.Err = code, errString(err)
	rec.Complete(op, st)
}

// check records a CheckToken of token on lock.
func (w *worker) check(ctx context.Context, lock string, token uint64) {
	rec := w.t.rec
	w.t.count("check")
	op := rec.Invoke(history.Op{Client: w.id, Lock: lock, Kind: history.Check, Token: token})
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	valid, err := w.c.CheckToken(octx, lock, token)
	cancel()
	st, code := status(err)
	if st != history.OK {
		st = history.Fail // a check changes nothing: an unanswered one is a no-op
	}
	op.Valid, op.Code, op.Err = valid, code, errString(err)
	rec.Complete(op, st)
}

// reader reads the locks with default consistency through one node only,
// so that a node serving stale reads (an old leader past its lease) is
// asked directly.
func (t *Traffic) reader(ctx context.Context, node int, rng *rand.Rand) {
	c, err := t.access(t.lockToken).Client(client.Config{Endpoints: []string{t.cfg.Endpoints[node]},
		RequestTimeout: 500 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		return
	}
	id := t.nextClient()
	for sleep(ctx, jitter(rng, 10*time.Millisecond, 40*time.Millisecond)) {
		t.count("read")
		t.readLock(ctx, c, history.Op{Client: id, Lock: LockNames[rng.IntN(len(LockNames))], Node: t.cfg.NodeIDs[node]}, client.Default, nil)
	}
}

// readLock reads the lock op names through c with consistency cons and
// records the read in the history as op: the holder it saw, or a failure
// (a read changes nothing, so a read that did not answer is a failure,
// never an unknown outcome). seen, if not nil, sees a successful read
// before it is recorded, to add to op (the queue it saw) or to note what
// the read proves.
func (t *Traffic) readLock(ctx context.Context, c *client.Client, op history.Op, cons client.Consistency, seen func(*history.Op, api.Lock)) {
	op.Kind = history.Read
	op = t.rec.Invoke(op)
	octx, cancel := context.WithTimeout(ctx, time.Second)
	lk, err := c.Lock(octx, op.Lock, cons)
	cancel()
	st, code := status(err)
	if st != history.OK {
		st = history.Fail
	} else {
		if len(lk.Holders) > 0 {
			op.Holder, op.Token = lk.Holders[0].Session, lk.Holders[0].Token
		}
		if seen != nil {
			seen(&op, lk)
		}
	}
	op.Code, op.Err = code, errString(err)
	t.rec.Complete(op, st)
}
