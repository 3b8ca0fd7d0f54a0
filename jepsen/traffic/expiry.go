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

// expiryTTL is the TTL of the sessions the expiry workload abandons.
const expiryTTL = time.Second

// idleSessions is how many sessions the expiry workload keeps alive as
// background load on the leader's keepalive path.
const idleSessions = 20

// expiryWorker creates sessions, takes a lock with each, and abandons them
// (no keepalive, no destroy) so that the server must expire them under
// load. The history learns that each such session may end from the send
// time of its create + TTL on: the server may not expire it earlier.
func (t *Traffic) expiryWorker(ctx context.Context, rng *rand.Rand) {
	c := t.newClient(t.nextClient(), t.lockToken)
	var idle []*client.Session
	defer func() {
		leave := t.gate.passSoon(ctx)
		defer leave()
		for _, s := range idle {
			s.Close()
		}
	}()
	for range idleSessions {
		leave, ok := t.gate.pass(ctx)
		if !ok {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if s, err := client.NewSession(cctx, c, client.WithTTL(2*time.Second)); err == nil {
			idle = append(idle, s)
		}
		cancel()
		leave()
	}
	id := t.nextClient()
	hc := t.gated(t.lockToken)
	for i := 0; sleep(ctx, jitter(rng, 300*time.Millisecond, 900*time.Millisecond)); i++ {
		t.abandonOne(ctx, hc, id, t.cfg.Endpoints[i%len(t.cfg.Endpoints)], rng)
	}
}

// abandonOne creates a session through endpoint ep, takes a lock with it,
// and abandons it.
func (t *Traffic) abandonOne(ctx context.Context, hc *http.Client, id int, ep string, rng *rand.Rand) {
	leave, ok := t.gate.pass(ctx)
	defer leave()
	if !ok {
		return
	}
	created := t.rec.Now()
	zero := api.Duration(0)
	var s api.Session
	if rawCall(ctx, hc, ep, "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(expiryTTL), LockDelay: &zero, Name: "abandoned"}, &s) != nil {
		return
	}
	l := LockNames[rng.IntN(len(LockNames))]
	t.count("abandon")
	op := t.rec.Invoke(history.Op{Client: id, Lock: l, Kind: history.Acquire, Session: s.ID})
	var r api.AcquireResponse
	err := rawCall(ctx, hc, ep, "/v1/locks/"+l+"/acquire", api.AcquireRequest{Session: s.ID}, &r)
	st, code := status(err)
	op.Token, op.Code, op.Err = r.Token, code, errString(err)
	t.rec.Complete(op, st)
	t.rec.Add(history.Op{Client: id, Lock: l, Kind: history.End, Session: s.ID, Status: history.Unknown,
		Call: created + int64(t.promisedTTL(expiryTTL)), Return: history.Infinity, Err: "abandoned"})
}

// rawCall sends one request without the client library (which would keep
// the session alive), once, with a one-second deadline.
func rawCall(ctx context.Context, hc *http.Client, base, path string, in, out any) error {
	return doJSON(ctx, hc, http.MethodPost, base+path, in, out)
}
