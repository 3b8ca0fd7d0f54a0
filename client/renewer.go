package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// renewer keeps a Client's sessions alive. Chubby renews a client, not each
// of its sessions: here one scheduler per Client decides when each session
// is due and renews every session due at the same moment in one request
// (POST /v1/sessions/keepalive), so that a process with a thousand sessions
// sends one request a round, not a thousand.
//
// A session is due TTL/3 after its last renewal was answered (TTL/20, at
// least 50ms, after a failed one). When one session is due, every session
// due within half its own interval goes with it: renewing early is harmless
// (the deadline only moves later), and sessions that once shared a request
// then stay together. A session with a request in flight waits for its
// answer before it is sent again, but requests for different sessions run
// side by side: one slow request never holds back another session's
// renewal. A single session's renewal is the one-session request
// (POST /v1/sessions/{id}/keepalive), as it always was.
//
// Each request carries the earliest local deadline of its sessions as its
// context's deadline: an answer after it could not save that session, and
// no session counts on an answer that arrives after its deadline. The
// local deadline a success gives is computed from the time the request was
// sent, which is no earlier than any server's receipt of it.
type renewer struct {
	c *Client

	mu      sync.Mutex
	due     map[*Session]*renewal
	running bool          // loop is running
	wake    chan struct{} // pokes loop: a session was added, removed or answered

	// single is set once a server answered the many-sessions request as
	// one it does not know (a server older than the endpoint): from then
	// on every session is renewed by its own request.
	single atomic.Bool
}

// renewal is what the renewer knows of one session.
type renewal struct {
	at   time.Time // when the next keepalive is due
	busy bool      // a keepalive carrying the session is in flight
}

func newRenewer(c *Client) *renewer {
	return &renewer{c: c, due: map[*Session]*renewal{}, wake: make(chan struct{}, 1)}
}

// every is how long after a renewal the session is due again; retryEvery
// how long after a failed one.
func (s *Session) every() time.Duration      { return s.ttl / 3 }
func (s *Session) retryEvery() time.Duration { return max(s.ttl/20, 50*time.Millisecond) }

// add starts keeping s alive: its first keepalive is due one interval from
// now (its creation renewed it).
func (r *renewer) add(s *Session) {
	r.mu.Lock()
	r.due[s] = &renewal{at: time.Now().Add(s.every())}
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if start {
		go r.loop()
	}
	r.poke()
}

// remove stops keeping s alive. A request in flight for it still answers,
// but its answer is no longer applied to s.
func (r *renewer) remove(s *Session) {
	r.mu.Lock()
	delete(r.due, s)
	r.mu.Unlock()
	r.poke()
}

func (r *renewer) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop sends the due sessions' keepalives, each batch on its own goroutine,
// and sleeps until the next is due. It returns when no session is left
// (add starts it again).
func (r *renewer) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if len(r.due) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		batch, next := r.take(time.Now())
		r.mu.Unlock()
		if len(batch) > 0 {
			for chunk := range slices.Chunk(batch, api.MaxKeepAliveIDs) {
				go r.send(chunk)
			}
			continue
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-r.wake:
		}
	}
}

// take marks busy and returns the sessions to renew now: none unless one is
// due, and then every idle session due within half its interval. next is
// when the earliest idle session is due. r.mu is held.
func (r *renewer) take(now time.Time) (batch []*Session, next time.Time) {
	next = now.Add(time.Hour)
	due := false
	for _, w := range r.due {
		if w.busy {
			continue
		}
		due = due || !w.at.After(now)
		if w.at.Before(next) {
			next = w.at
		}
	}
	if !due {
		return nil, next
	}
	for s, w := range r.due {
		if !w.busy && !w.at.After(now.Add(s.every()/2)) {
			w.busy = true
			batch = append(batch, s)
		}
	}
	return batch, next
}

// send renews batch in one request and applies the answer to each session
// still kept alive.
func (r *renewer) send(batch []*Session) {
	deadline := batch[0].Deadline()
	for _, s := range batch[1:] {
		if d := s.Deadline(); d.Before(deadline) {
			deadline = d
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	sent := time.Now()
	errs := r.keepAlive(ctx, batch)
	cancel()

	now := time.Now()
	r.mu.Lock()
	for i, s := range batch {
		w, ok := r.due[s]
		if !ok {
			errs[i] = nil // closed meanwhile: nothing to apply
			batch[i] = nil
			continue
		}
		w.busy = false
		switch {
		case errs[i] == nil:
			w.at = now.Add(s.every())
		case errors.Is(errs[i], ErrSessionExpired):
			delete(r.due, s)
		default:
			w.at = now.Add(s.retryEvery())
		}
	}
	r.mu.Unlock()
	for i, s := range batch {
		switch {
		case s == nil:
		case errs[i] == nil:
			s.renew(sent)
		case errors.Is(errs[i], ErrSessionExpired):
			s.lose(ErrSessionExpired)
		default:
			s.checkDeadline()
		}
	}
	r.poke()
}

// keepAlive renews the sessions of batch, one error per session: nil
// renewed, ErrSessionExpired gone for good, anything else unknown.
func (r *renewer) keepAlive(ctx context.Context, batch []*Session) []error {
	errs := make([]error, len(batch))
	if len(batch) > 1 && !r.single.Load() {
		ids := make([]string, len(batch))
		for i, s := range batch {
			ids[i] = s.id
		}
		out, err := r.c.KeepAliveSessions(ctx, ids...)
		switch {
		case err == nil:
			return manyErrors(ids, out)
		case errors.Is(err, &api.Error{Code: api.CodeNotFound}), errors.Is(err, ErrBadRequest):
			// A server without the endpoint answers 404, or 405
			// (bad_request) where POST /v1/sessions/{id} is not a
			// route; this one accepts a well-formed request of at most
			// api.MaxKeepAliveIDs ids, so neither answer means anything
			// else. Renew one by one from now on.
			r.single.Store(true)
		default:
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	var wg sync.WaitGroup
	for i, s := range batch {
		wg.Go(func() { errs[i] = r.c.keepAlive(ctx, s.id) })
	}
	wg.Wait()
	return errs
}

// manyErrors reads a many-sessions answer: each id renewed, expired, or (in
// neither list, which a server does not answer) unknown.
func manyErrors(ids []string, out api.KeepAliveManyResponse) []error {
	got := make(map[string]error, len(ids))
	for _, k := range out.Renewed {
		got[k.ID] = nil
	}
	for _, id := range out.Expired {
		got[id] = ErrSessionExpired
	}
	errs := make([]error, len(ids))
	for i, id := range ids {
		err, ok := got[id]
		if !ok {
			err = errors.New("client: keepalive answer does not list session " + id)
		}
		errs[i] = err
	}
	return errs
}
