package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// Defaults of a Session.
const (
	// DefaultDrift is the clock-rate difference between client and server
	// the local deadline allows for: 1%.
	DefaultDrift = 0.01
)

type sessionOptions struct {
	ttl, lockDelay time.Duration
	delaySet       bool
	name           string
	margin         time.Duration
	drift          float64
}

// SessionOption configures NewSession.
type SessionOption func(*sessionOptions)

// WithTTL sets the session's TTL (server default 15s; 1s..24h).
func WithTTL(d time.Duration) SessionOption { return func(o *sessionOptions) { o.ttl = d } }

// WithLockDelay sets how long the session's locks stay ungrantable after it
// expires (server default 5s; 0..60s).
func WithLockDelay(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.lockDelay, o.delaySet = d, true }
}

// WithName labels the session for operators.
func WithName(name string) SessionOption { return func(o *sessionOptions) { o.name = name } }

// WithMargin sets how much earlier than the TTL allows the session gives
// itself up. Default TTL/10.
func WithMargin(d time.Duration) SessionOption { return func(o *sessionOptions) { o.margin = d } }

// WithDrift sets the clock-rate difference the local deadline allows for.
// Default DefaultDrift.
func WithDrift(f float64) SessionOption { return func(o *sessionOptions) { o.drift = f } }

// Session is a lockd session kept alive in the background. Locks and
// election leadership belong to a session and end with it.
//
// The session keeps a conservative local deadline (see the package doc):
// the send time of the last successful keepalive + TTL x (1 - drift) -
// margin. When it passes, or when the server says the session is gone, Ctx
// is cancelled and Done is closed, before the server could have granted the
// session's locks to anyone else.
type Session struct {
	c     *Client
	id    string
	ttl   time.Duration
	delay time.Duration
	opts  sessionOptions

	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool // Close was called

	seq atomic.Uint64 // last request number handed out (see nextSeq)

	mu       sync.Mutex
	deadline time.Time // local, monotonic
	err      error     // why the session ended
	timer    *time.Timer
}

// NewSession creates a session on the cluster and starts keeping it alive.
func NewSession(ctx context.Context, c *Client, opts ...SessionOption) (*Session, error) {
	o := sessionOptions{drift: DefaultDrift}
	for _, f := range opts {
		f(&o)
	}
	req := api.CreateSessionRequest{TTL: api.Duration(o.ttl), Name: o.name}
	if o.delaySet {
		d := api.Duration(o.lockDelay)
		req.LockDelay = &d
	}
	sent := time.Now()
	ws, err := c.createSession(ctx, req)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, id: ws.ID, ttl: ws.TTL.D(), delay: ws.LockDelay.D(), opts: o}
	if s.opts.margin <= 0 {
		s.opts.margin = s.ttl / 10
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.deadline = s.localDeadline(sent)
	s.timer = time.AfterFunc(time.Until(s.deadline), s.checkDeadline)
	s.mu.Unlock()
	c.renewals.add(s)
	return s, nil
}

// nextSeq returns the number for a new lock or election operation. Retries
// of one operation reuse its number, so that the server can tell a late,
// abandoned request from a new one (see api.AcquireRequest).
func (s *Session) nextSeq() uint64 { return s.seq.Add(1) }

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// TTL returns the session's TTL as the server granted it.
func (s *Session) TTL() time.Duration { return s.ttl }

// LockDelay returns the session's lock-delay.
func (s *Session) LockDelay() time.Duration { return s.delay }

// Ctx returns a context cancelled when the session is lost or closed.
func (s *Session) Ctx() context.Context { return s.ctx }

// Done returns a channel closed when the session is lost or closed.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err returns nil while the session lives, and then why it ended:
// ErrSessionLost (local deadline passed), ErrSessionExpired (the server
// ended it) or context.Canceled (Close).
func (s *Session) Err() error {
	s.Alive()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Deadline returns the local deadline: until then the session's locks
// cannot have been granted to anyone else.
func (s *Session) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// Alive checks the local deadline now, rather than waiting for the timer,
// and reports whether the session is still safely alive. Every operation of
// Mutex and Election calls it first, so a process that wakes from a pause
// learns of the loss before it does anything else through the library.
func (s *Session) Alive() bool {
	s.checkDeadline()
	return s.ctx.Err() == nil
}

func (s *Session) localDeadline(sent time.Time) time.Time {
	return sent.Add(time.Duration(float64(s.ttl)*(1-s.opts.drift)) - s.opts.margin)
}

func (s *Session) checkDeadline() {
	s.mu.Lock()
	passed := !time.Now().Before(s.deadline)
	s.mu.Unlock()
	if passed {
		s.lose(ErrSessionLost)
	}
}

// lose ends the session with err, once, and stops its keepalives.
func (s *Session) lose(err error) {
	s.mu.Lock()
	first := s.err == nil
	if first {
		s.err = err
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.cancel()
	if first {
		s.c.renewals.remove(s)
	}
}

// renew moves the local deadline after a keepalive sent at sent succeeded.
func (s *Session) renew(sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if d := s.localDeadline(sent); d.After(s.deadline) {
		s.deadline = d
		s.timer.Reset(time.Until(d))
	}
}

// Close stops the keepalives and destroys the session on the server, which
// releases its locks at once. It returns the error of the destroy, if any;
// the session is ended locally either way.
func (s *Session) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.lose(context.Canceled)
	// Destroy even a session that lapsed locally: the server may still
	// hold its locks, and destroying frees them without the lock-delay.
	ctx, cancel := context.WithTimeout(context.Background(), min(s.ttl, 5*time.Second))
	defer cancel()
	err := s.c.destroySession(ctx, s.id)
	if errors.Is(err, ErrSessionExpired) {
		return nil
	}
	return err
}
