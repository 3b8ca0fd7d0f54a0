package traffic

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
)

// RetryLock is the lock the request-number worker uses, and nobody else.
const RetryLock = "jepsen/r0"

// Steps of a request-number cycle (Retry.Step).
const (
	RetryFirst  = "first"  // acquire with number n
	RetryRepeat = "repeat" // the same request again, while it holds the lock
	RetryFree   = "release"
	RetryLate   = "late" // the same request again, after the release
)

// Retry is one request of the request-number worker: lockd promises that
// a request repeated with the number it was first sent with (a client's
// retry, or an abandoned request arriving late) gets the first answer
// while that still holds and is never granted anew.
type Retry struct {
	Session string
	Seq     uint64
	Step    string
	Status  history.Status
	Token   uint64
	Code    string
	Call    int64
	Return  int64
}

// retryWorker takes RetryLock with request number n, repeats the request
// (whatever the first answer was, if it was definite: a refusal must be
// repeated too), releases with n+1, and then sends the first request once
// more, as a late retry would arrive. It talks HTTP itself, since the client library
// numbers its requests on its own.
func (t *Traffic) retryWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.lockToken, nil, rng)
	defer w.endSession()
	hc := t.gated(t.lockToken)
	var seq uint64
	var last string
	for sleep(ctx, jitter(rng, 20*time.Millisecond, 150*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil || !s.Alive() {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if s.ID() != last {
			last, seq = s.ID(), 0
		}
		ep := t.cfg.Endpoints[rng.IntN(len(t.cfg.Endpoints))]
		do := func(step, verb string, n uint64) Retry {
			r := Retry{Session: s.ID(), Seq: n, Step: step}
			var in any = api.SessionRequest{Session: s.ID(), Seq: n}
			if verb == "acquire" {
				in = api.AcquireRequest{Session: s.ID(), Seq: n}
			}
			r.Call = t.rec.Now()
			var out api.AcquireResponse
			err := postJSON(ctx, hc, ep+"/v1/locks/"+RetryLock+"/"+verb, in, &out)
			r.Return = t.rec.Now()
			r.Status, r.Code = status(err)
			if r.Status == history.Unknown {
				r.Return = history.Infinity
			}
			r.Token = out.Token
			t.addRetry(r)
			return r
		}
		// Its requests are writes like any worker's: the gate holds them
		// back (hc only refuses the nodes the gate cuts).
		leave, ok := t.gate.pass(ctx)
		if !ok {
			break
		}
		seq += 2
		first := do(RetryFirst, "acquire", seq-1)
		if first.Status != history.Unknown {
			t.count("request-number repeats")
			do(RetryRepeat, "acquire", seq-1)
		}
		if rel := do(RetryFree, "release", seq); rel.Status == history.OK && first.Status == history.OK {
			t.count("request-number repeats")
			do(RetryLate, "acquire", seq-1)
		}
		leave()
	}
}

// postJSON posts in to url with a one-second deadline and decodes a
// successful answer into out; an error answer comes back as a wire error.
func postJSON(ctx context.Context, hc *http.Client, url string, in, out any) error {
	return doJSON(ctx, hc, http.MethodPost, url, in, out)
}

func (t *Traffic) addRetry(r Retry) {
	t.mu.Lock()
	t.retries = append(t.retries, r)
	t.mu.Unlock()
}

// Retries returns the request-number worker's requests.
func (t *Traffic) Retries() []Retry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Retry(nil), t.retries...)
}
