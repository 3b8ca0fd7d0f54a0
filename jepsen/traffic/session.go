package traffic

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/lease"
)

// worker is one client of a workload: a client.Client, its current
// session, and its number in the history.
type worker struct {
	t     *Traffic
	id    int
	c     *client.Client
	s     *client.Session
	locks []string // the locks whose histories must learn of the session's end
	rng   *rand.Rand
	// ends holds, per lock, where the worker notes when it gave up the
	// holding it is watching (see watchHold and giveUp).
	ends map[string]*atomic.Int64
}

// newWorker returns a worker whose client speaks with token.
func (t *Traffic) newWorker(token string, locks []string, rng *rand.Rand) *worker {
	id := t.nextClient()
	return &worker{t: t, id: id, c: t.sharedClient(id, token), locks: locks, rng: rng}
}

// workersPerClient is how many workers share one client.Client. A client
// renews its sessions together, several in one request
// (POST /v1/sessions/keepalive), as a process with several sessions does;
// workers that share a client make that path run under the faults as well
// as the one-session keepalive.
const workersPerClient = 2

// sharedClient is a client and how many workers use it.
type sharedClient struct {
	c    *client.Client
	uses int
}

// sharedClient returns the client the worker numbered id shares with the
// worker before it of the same token, or a new one.
func (t *Traffic) sharedClient(id int, token string) *client.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sc := t.shared[token]; sc != nil && sc.uses < workersPerClient {
		sc.uses++
		return sc.c
	}
	c := t.newClient(id, token)
	t.shared[token] = &sharedClient{c: c, uses: 1}
	return c
}

// session returns a live session, replacing a lost one.
func (w *worker) session(ctx context.Context) *client.Session {
	if w.s != nil && w.s.Alive() {
		return w.s
	}
	if w.s != nil {
		w.endSession()
	}
	leave, ok := w.t.gate.pass(ctx)
	defer leave()
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := client.NewSession(cctx, w.c, client.WithTTL(w.t.cfg.TTL), client.WithLockDelay(0),
		client.WithName("jepsen"))
	if err != nil {
		return nil
	}
	w.s = s
	return s
}

// ServerPromise returns the earliest moment the server may expire s, a
// session created with the library's default drift and margin: the send
// time of the last keepalive (or create) the server acknowledged + TTL x
// (1 - drift), where drift is the nodes' clock-drift bound (DriftBound).
// The server measures the TTL from the request's arrival, which is later,
// on the leader's clock, which may run fast by up to the drift bound.
//
// The library's deadline is that send time + TTL x (1 - its own drift) -
// margin; the difference is the library's own safety, which gives the
// holder time to stop before the server may drop it. An End recorded from
// the library's deadline would let the checkers accept a server that
// expires sessions that much early (0.1 x TTL and more).
func ServerPromise(s *client.Session, drift float64) time.Time {
	ttl := s.TTL()
	safety := ttl - (time.Duration(float64(ttl)*(1-client.DefaultDrift)) - ttl/10)
	return s.Deadline().Add(safety - time.Duration(float64(ttl)*drift))
}

// DriftBound is the clock-drift bound of nodes started with
// --max-clock-drift set to v, in the harness's convention: 0 for lockd's
// default, negative for an explicit 0.
func DriftBound(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return lease.DefaultConfig().MaxClockDrift
	}
	return v
}

// promisedTTL is how much real time the server promises a session of ttl
// at least: its leader measures ttl on a clock that may run fast by the
// drift bound.
func (t *Traffic) promisedTTL(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl) * (1 - DriftBound(t.cfg.MaxClockDrift)))
}

// endSession ends the current session and records the end in the history
// of every lock the worker uses. A session the library lost may be expired
// by the server at any moment from the server's promise on (ServerPromise);
// a live one is destroyed now.
func (w *worker) endSession() {
	s := w.s
	w.s = nil
	if s == nil {
		return
	}
	rec := w.t.rec
	promise := ServerPromise(s, DriftBound(w.t.cfg.MaxClockDrift))
	if !s.Alive() {
		for _, l := range w.locks {
			rec.Add(history.Op{Client: w.id, Lock: l, Kind: history.End, Session: s.ID(),
				Status: history.Unknown, Call: rec.At(promise), Return: history.Infinity, Err: "expired"})
		}
		// The destroy releases the session's locks at once: sent before the
		// promise, it would end the session before the End above. The wait
		// is at most the library's safety, a tenth of the TTL and a little.
		time.Sleep(time.Until(promise))
		leave := w.t.gate.passSoon(context.Background())
		s.Close() // stops its goroutines; the destroy, if it lands, is inside the End above
		leave()
		return
	}
	leave := w.t.gate.passSoon(context.Background())
	call := rec.Now()
	err := s.Close()
	leave()
	st, _ := status(err)
	ret := rec.Now()
	if st != history.OK {
		ret = history.Infinity
	}
	for _, l := range w.locks {
		rec.Add(history.Op{Client: w.id, Lock: l, Kind: history.End, Session: s.ID(),
			Status: st, Call: min(call, rec.At(promise)), Return: ret, Err: errString(err)})
	}
}

// watchHold records the library's belief that m holds its lock, from now
// until the worker gives it up (giveUp, as it invokes Unlock or Resign) or
// Lost closes (the session lost). It returns at the latest when ctx has
// ended and a grace period passed, recording an open hold.
func (w *worker) watchHold(ctx context.Context, lock string, token uint64, lost <-chan struct{}, s *client.Session) {
	w.watchHoldMode(ctx, lock, token, lost, s, false)
}

// watchHoldMode is watchHold for a holding that may be shared (which
// other shared holdings of the lock may overlap).
func (w *worker) watchHoldMode(ctx context.Context, lock string, token uint64, lost <-chan struct{}, s *client.Session, shared bool) {
	rec := w.t.rec
	h := history.Hold{Client: w.id, Lock: lock, Session: s.ID(), Token: token, From: rec.Now(), Shared: shared}
	given := new(atomic.Int64)
	if w.ends == nil {
		w.ends = map[string]*atomic.Int64{}
	}
	w.ends[lock] = given
	w.t.spawn(func() {
		select {
		case <-lost:
		case <-ctx.Done():
			select {
			case <-lost:
			case <-time.After(30 * time.Second):
				h.To = history.Infinity
				rec.AddHold(h)
				return
			}
		}
		// Lost closes when Unlock or Resign is invoked, but this goroutine
		// may run much later: the worker's note of when it gave the
		// holding up is the belief's end then.
		h.To = min(rec.Now(), rec.At(s.Deadline()))
		if at := given.Load(); at != 0 {
			h.To = min(h.To, at)
		}
		rec.AddHold(h)
	})
}

// giveUp notes that the worker gives up its holding of lock at the
// harness time at; call it before Unlock or Resign, which close Lost.
func (w *worker) giveUp(lock string, at int64) {
	if given := w.ends[lock]; given != nil {
		given.Store(max(at, 1))
		delete(w.ends, lock)
	}
}
