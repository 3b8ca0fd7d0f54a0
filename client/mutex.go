package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/ctxsleep"
)

// maxWaitChunk is how long one blocking acquire asks the server to wait,
// the API's limit. A longer Lock is several of them, and each new one
// queues afresh at the back, so a Lock that waits longer than this is not
// served strictly in arrival order.
const maxWaitChunk = api.MaxWait

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// Shared makes the Mutex take the lock in shared mode: shared holders
// coexist, and exclude exclusive ones.
func Shared() MutexOption { return func(m *Mutex) { m.mode = api.ModeShared } }

// Limit makes the Mutex take one of the n slots of a counting semaphore
// (1 to api.MaxLimit): up to n sessions hold the lock at once, each with a
// token of its own. Every Mutex on the lock must give the same n (the
// server refuses another with ErrBadRequest while the lock has holders or
// waiters); it does not go with Shared. See NewSemaphore.
func Limit(n int) MutexOption { return func(m *Mutex) { m.limit = n } }

// NewSemaphore returns a Mutex that holds one of the limit slots of the
// counting semaphore name, on session s: NewMutex with Limit(limit). Lock
// waits for a slot (waiters are served in arrival order, one per freed
// slot), Token is this holder's fencing token, and Lost tells when this
// holding ended. Tokens of concurrent holders of a semaphore are all
// current: a resource they share must not refuse a token because a higher
// one was seen (as Fence does), but may ask Client.CheckToken.
func NewSemaphore(s *Session, name string, limit int) *Mutex {
	return NewMutex(s, name, Limit(limit))
}

// Mutex is a lock held by a Session. Its holding ends with Unlock or when
// the session is lost; Lost tells which holding ended.
//
// Holding a Mutex is not a guarantee that nobody else holds the lock at the
// moment you act (see the package doc): pass Token to the resource you
// protect, and let it reject stale tokens.
type Mutex struct {
	s     *Session
	name  string
	mode  string
	limit int // a semaphore's, or 0

	mu      sync.Mutex
	token   uint64
	held    bool
	lost    chan struct{} // closed by release when the current holding ends
	release func()        // ends the current holding, once
}

// NewMutex returns a Mutex for the lock name on session s. It does no I/O.
func NewMutex(s *Session, name string, opts ...MutexOption) *Mutex {
	m := &Mutex{s: s, name: name, mode: api.ModeExclusive}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// Limit returns the semaphore's limit, or 0 for an exclusive or shared lock.
func (m *Mutex) Limit() int { return m.limit }

// Lock blocks until the session holds the lock, ctx ends, or the session is
// lost. Waiters are served in arrival order.
//
// When Lock (or TryLock) returns an error, the caller must act as if it
// does not hold the lock, and the Mutex sees to it that the session does
// not hold it either. If the server's answer was a refusal (ErrLockHeld,
// ErrLockDelay, ErrSessionLost), nothing was granted. If the outcome is
// unknown (ctx ended while the request was in flight, the answer was lost,
// the server answered ErrTimeout or ErrNoLeader after a lost leadership),
// the server may have granted the lock, or may still keep the session's
// place in its queue (a queued acquire whose caller hangs up stays queued
// until its wait runs out, so that a retry finds its place), so the Mutex
// gives it back: with a release, which also ends a place in the queue,
// numbered after the acquire, so that a grant arriving late cannot outlast
// it, and before a later Lock, whose number is higher still and so is
// never undone by it. The release is sent before the error is returned,
// or in the background when ctx has already ended, and is tried for a few
// seconds; if the cluster cannot be reached for that long, the lock (or
// the place, and the lock it may lead to) stays with the session until the
// session ends or releases it. A Mutex that already held the
// lock keeps it: a failed repeat of Lock changes nothing on the server.
func (m *Mutex) Lock(ctx context.Context) error {
	for {
		wait := maxWaitChunk
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		err := m.acquire(ctx, max(wait, time.Millisecond))
		if errors.Is(err, ErrLockHeld) && ctx.Err() == nil {
			continue // this chunk of waiting ran out
		}
		if errors.Is(err, ErrLockDelay) && ctx.Err() == nil {
			if err := sleepCtx(ctx, retryAfter(err)); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// TryLock takes the lock if it is free now, else returns ErrLockHeld (or
// ErrLockDelay inside an expired holder's lock-delay). An error leaves the
// lock free of this session, as for Lock.
func (m *Mutex) TryLock(ctx context.Context) error { return m.acquire(ctx, 0) }

func (m *Mutex) acquire(ctx context.Context, wait time.Duration) error {
	if !m.s.Alive() {
		return ErrSessionLost
	}
	held := m.holding()
	r, err := m.s.c.acquire(ctx, m.name, api.AcquireRequest{Session: m.s.id, Mode: m.mode, Limit: m.limit, Wait: api.Duration(wait), Seq: m.s.nextSeq()})
	if err != nil {
		if errors.Is(err, ErrSessionExpired) {
			m.s.lose(ErrSessionExpired)
			return ErrSessionLost
		}
		if !held && outcomeUnknown(err) {
			giveBack(ctx, m.s, func(ctx context.Context, seq uint64) error {
				return m.s.c.release(ctx, m.name, m.s.id, seq)
			})
		}
		return err
	}
	if !m.s.Alive() {
		return ErrSessionLost
	}
	m.hold(r.Token)
	return nil
}

// hold records a holding with token and watches the session for its loss.
func (m *Mutex) hold(token uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held && m.token == token {
		return
	}
	lost, unlocked := make(chan struct{}), make(chan struct{})
	m.token, m.held, m.lost = token, true, lost
	m.release = sync.OnceFunc(func() {
		m.mu.Lock()
		if m.lost == lost {
			m.held = false
		}
		m.mu.Unlock()
		close(unlocked)
		close(lost)
	})
	release := m.release
	go func() {
		select {
		case <-m.s.Done():
			release()
		case <-unlocked:
		}
	}()
}

// holding reports whether the Mutex believes it holds the lock, without
// the deadline check of Held.
func (m *Mutex) holding() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}

// giveBackTimeout bounds how long the Mutex keeps trying to give back a
// lock an acquire of unknown outcome may have taken.
const giveBackTimeout = 5 * time.Second

// outcomeUnknown reports whether an acquire or campaign that failed with
// err may nevertheless have been granted: anything but a refusal the
// server answered with.
func outcomeUnknown(err error) bool {
	switch api.CodeOf(err) {
	case api.CodeLockHeld, api.CodeLockDelay, api.CodeRepeated, api.CodeSessionExpired, api.CodeNotHolder,
		api.CodeBadRequest, api.CodeNotFound, api.CodeTooLarge, api.CodeUnauthorized, api.CodeForbidden:
		return false
	}
	return true
}

// giveBack undoes a grant an acquire or campaign of unknown outcome may
// have made, through undo (a release or a resign) with the request number
// it is given. The number is taken now, before the caller can start
// another operation, so that the undo is ordered after the acquire it
// undoes and before anything the caller does next. It runs before
// giveBack returns, or in the background if ctx has ended; either way for
// at most giveBackTimeout, and not past the session's end (which releases
// everything anyway).
func giveBack(ctx context.Context, s *Session, undo func(ctx context.Context, seq uint64) error) {
	seq := s.nextSeq()
	run := func() {
		uctx, cancel := context.WithTimeout(s.Ctx(), giveBackTimeout)
		defer cancel()
		_ = undo(uctx, seq) // not_holder: nothing was granted; any other failure: the session's end releases it
	}
	if ctx.Err() != nil {
		go run()
		return
	}
	run()
}

// Unlock releases the lock. A lock this session no longer holds (released
// already, or lost with the session) is not an error.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.endHolding()
	err := m.s.c.release(ctx, m.name, m.s.id, m.s.nextSeq())
	if errors.Is(err, ErrNotHolder) || errors.Is(err, ErrSessionExpired) {
		return nil
	}
	return err
}

func (m *Mutex) endHolding() {
	m.mu.Lock()
	release := m.release
	m.mu.Unlock()
	if release != nil {
		release()
	}
}

// Held reports whether the Mutex holds its lock, checking the session's
// local deadline now: a process that wakes from a pause past the deadline
// sees false, and Lost closed, before it can act on the lock.
func (m *Mutex) Held() bool {
	if !m.s.Alive() {
		m.endHolding()
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}

// Token returns the fencing token of the current holding, or 0 if the lock
// is not held (never taken, unlocked, or lost with the session).
func (m *Mutex) Token() uint64 {
	if !m.Held() {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Lost returns a channel closed when the current holding ends: the session
// was lost (its local deadline passed or the server ended it) or Unlock was
// called. Before the first successful Lock it returns nil (blocks forever
// in a select).
func (m *Mutex) Lost() <-chan struct{} {
	m.Held() // a pause may have ended the session: the channel says so at once
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

func retryAfter(err error) time.Duration {
	var e *api.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return 100 * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) error { return ctxsleep.Sleep(ctx, d) }
