package traffic

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// DelayLocks are the locks the lock-delay workers contend for: sessions
// with a lock-delay take one and are abandoned while holding it, and the
// contenders try them all the time, so that a grant inside a delay would
// be seen. Two, so that one is free to take while the other is still held
// by an abandoned session or inside its delay.
var DelayLocks = []string{"jepsen/d0", "jepsen/d1"}

// Lock-delays of the abandoned sessions, against the run's TTL (2 s by
// default).
const (
	minLockDelay = 300 * time.Millisecond
	maxLockDelay = time.Second
)

// delayAbandoner creates sessions with a lock-delay, takes one of
// DelayLocks with each when it can, and abandons them (no keepalive, no destroy), so that
// the server can only expire them, and must then keep the lock from
// everyone for the session's lock-delay. The End it records starts at the
// server's promise: the send time of the create + TTL, less the drift
// bound.
func (t *Traffic) delayAbandoner(ctx context.Context, rng *rand.Rand) {
	id := t.nextClient()
	hc := t.gated(t.lockToken)
	for i := 0; sleep(ctx, jitter(rng, 200*time.Millisecond, 700*time.Millisecond)); i++ {
		l := DelayLocks[i%len(DelayLocks)]
		t.abandonHolding(ctx, hc, id, t.cfg.Endpoints[i%len(t.cfg.Endpoints)], l, jitter(rng, minLockDelay, maxLockDelay))
	}
}

func (t *Traffic) abandonHolding(ctx context.Context, hc *http.Client, id int, ep, lock string, delay time.Duration) {
	leave, ok := t.gate.pass(ctx)
	defer leave()
	if !ok {
		return
	}
	ttl := t.cfg.TTL
	created := t.rec.Now()
	ld := api.Duration(delay)
	var s api.Session
	if rawCall(ctx, hc, ep, "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &ld, Name: "delayed"}, &s) != nil {
		return
	}
	t.count("acquire")
	op := t.rec.Invoke(history.Op{Client: id, Lock: lock, Kind: history.Acquire, Session: s.ID, Mode: api.ModeExclusive})
	var r api.AcquireResponse
	err := rawCall(ctx, hc, ep, "/v1/locks/"+lock+"/acquire", api.AcquireRequest{Session: s.ID, Seq: 1}, &r)
	st, code := status(err)
	op.Token, op.Code, op.Err = r.Token, code, errString(err)
	t.rec.Complete(op, st)
	if st == history.OK {
		t.count("lock-delay expiries")
	}
	t.rec.Add(history.Op{Client: id, Lock: lock, Kind: history.End, Session: s.ID, Status: history.Unknown,
		Call: created + int64(t.promisedTTL(ttl)), Return: history.Infinity, Err: "abandoned", Expire: true, LockDelay: delay})
}

// delayContender tries DelayLocks again and again with try acquires,
// holds one briefly and releases it.
func (t *Traffic) delayContender(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.lockToken, DelayLocks, rng)
	defer w.endSession()
	for sleep(ctx, jitter(rng, 10*time.Millisecond, 40*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		l := DelayLocks[rng.IntN(len(DelayLocks))]
		m := client.NewMutex(s, l)
		if _, ok := w.acquire(ctx, m, l); !ok {
			continue
		}
		if !sleep(ctx, jitter(rng, 10*time.Millisecond, 100*time.Millisecond)) {
			w.release(context.WithoutCancel(ctx), m)
			break
		}
		w.release(ctx, m)
	}
}
