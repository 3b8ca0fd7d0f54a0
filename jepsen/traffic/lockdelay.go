package traffic

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/jepsen/history"
)

// DelayLock is the lock the lock-delay workers contend for: sessions with
// a lock-delay take it and are abandoned while holding it, and the
// contenders try it all the time, so that a grant inside a delay would be
// seen.
const DelayLock = "jepsen/d0"

// Lock-delays of the abandoned sessions, against the run's TTL (2 s by
// default).
const (
	minLockDelay = 300 * time.Millisecond
	maxLockDelay = time.Second
)

// delayAbandoner creates sessions with a lock-delay, takes DelayLock with
// each when it can, and abandons them (no keepalive, no destroy), so that
// the server can only expire them, and must then keep the lock from
// everyone for the session's lock-delay. The End it records starts at the
// server's promise: the send time of the create + TTL.
func (t *Traffic) delayAbandoner(ctx context.Context, rng *rand.Rand) {
	id := t.nextClient()
	hc := &http.Client{Transport: t.gate.transport(http.DefaultTransport)}
	for i := 0; sleep(ctx, jitter(rng, 500*time.Millisecond, 1500*time.Millisecond)); i++ {
		t.abandonHolding(ctx, hc, id, t.cfg.Endpoints[i%len(t.cfg.Endpoints)], jitter(rng, minLockDelay, maxLockDelay))
	}
}

func (t *Traffic) abandonHolding(ctx context.Context, hc *http.Client, id int, ep string, delay time.Duration) {
	leave, ok := t.gate.pass(ctx)
	defer leave()
	if !ok {
		return
	}
	ttl := t.cfg.TTL
	created := t.rec.Now()
	ld := wire.Duration(delay)
	var s wire.Session
	if rawCall(ctx, hc, ep, "/v1/sessions", wire.CreateSessionRequest{TTL: wire.Duration(ttl), LockDelay: &ld, Name: "delayed"}, &s) != nil {
		return
	}
	t.count("acquire")
	op := t.rec.Invoke(history.Op{Client: id, Lock: DelayLock, Kind: history.Acquire, Session: s.ID, Mode: wire.ModeExclusive})
	var r wire.AcquireResponse
	err := rawCall(ctx, hc, ep, "/v1/locks/"+DelayLock+"/acquire", wire.AcquireRequest{Session: s.ID, Seq: 1}, &r)
	st, code := status(err)
	op.Token, op.Code, op.Err = r.Token, code, errString(err)
	t.rec.Complete(op, st)
	if st == history.OK {
		t.count("lock-delay expiries")
	}
	t.rec.Add(history.Op{Client: id, Lock: DelayLock, Kind: history.End, Session: s.ID, Status: history.Unknown,
		Call: created + int64(ttl), Return: history.Infinity, Err: "abandoned", Expire: true, LockDelay: delay})
}

// delayContender tries DelayLock again and again with try acquires, holds
// it briefly and releases it.
func (t *Traffic) delayContender(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker([]string{DelayLock}, rng)
	defer w.endSession()
	for sleep(ctx, jitter(rng, 10*time.Millisecond, 40*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		m := client.NewMutex(s, DelayLock)
		if _, ok := w.acquire(ctx, m, DelayLock); !ok {
			continue
		}
		if !sleep(ctx, jitter(rng, 10*time.Millisecond, 100*time.Millisecond)) {
			w.release(context.WithoutCancel(ctx), m)
			break
		}
		w.release(ctx, m)
	}
}
