package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/ctxsleep"
)

// maxWaitChunk is how long one blocking acquire asks the server to wait,
// the API's limit. A longer Lock is several of them, and each new one
// queues afresh at the back, so a Lock that waits longer than this is not
// served strictly in arrival order.
const maxWaitChunk = wire.MaxWait

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// Shared makes the Mutex take the lock in shared mode: shared holders
// coexist, and exclude exclusive ones.
func Shared() MutexOption { return func(m *Mutex) { m.mode = wire.ModeShared } }

// Mutex is a lock held by a Session. Its holding ends with Unlock or when
// the session is lost; Lost tells which holding ended.
//
// Holding a Mutex is not a guarantee that nobody else holds the lock at the
// moment you act (see the package doc): pass Token to the resource you
// protect, and let it reject stale tokens.
type Mutex struct {
	s    *Session
	name string
	mode string

	mu      sync.Mutex
	token   uint64
	held    bool
	lost    chan struct{} // closed by release when the current holding ends
	release func()        // ends the current holding, once
}

// NewMutex returns a Mutex for the lock name on session s. It does no I/O.
func NewMutex(s *Session, name string, opts ...MutexOption) *Mutex {
	m := &Mutex{s: s, name: name, mode: wire.ModeExclusive}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the session holds the lock, ctx ends, or the session is
// lost. Waiters are served in arrival order.
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
// ErrLockDelay inside an expired holder's lock-delay).
func (m *Mutex) TryLock(ctx context.Context) error { return m.acquire(ctx, 0) }

func (m *Mutex) acquire(ctx context.Context, wait time.Duration) error {
	if !m.s.Alive() {
		return ErrSessionLost
	}
	r, err := m.s.c.acquire(ctx, m.name, wire.AcquireRequest{Session: m.s.id, Mode: m.mode, Wait: wire.Duration(wait), Seq: m.s.nextSeq()})
	if err != nil {
		if errors.Is(err, ErrSessionExpired) {
			m.s.lose(ErrSessionExpired)
			return ErrSessionLost
		}
		if ctx.Err() != nil && wait > 0 {
			// The server leaves the queue when we go away, but a grant
			// may have raced with that: give back what we may hold.
			m.bestEffortRelease()
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

func (m *Mutex) bestEffortRelease() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m.s.c.release(ctx, m.name, m.s.id, m.s.nextSeq())
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
	var e *wire.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return 100 * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) error { return ctxsleep.Sleep(ctx, d) }
