package load_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// memSystem is a System in memory: enough for the rows' loops to run
// against something that is not lockd.
type memSystem struct {
	mu       sync.Mutex
	next     int
	holders  map[string]*memSession
	sessions int // live
}

type memSession struct {
	sys  *memSystem
	id   string
	gone bool
}

func (m *memSystem) NewSession(ctx context.Context, i int, ttl time.Duration) (load.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	m.sessions++
	return &memSession{sys: m, id: fmt.Sprint("m", m.next)}, nil
}

func (m *memSystem) Writes(context.Context) (uint64, error) {
	return 0, fmt.Errorf("memSystem: %w", errors.ErrUnsupported)
}

func (m *memSystem) Waiters(context.Context, string) (int, error) {
	return 0, fmt.Errorf("memSystem: %w", errors.ErrUnsupported)
}

func (m *memSystem) Watch(context.Context, int, string, uint64, time.Duration, func()) (uint64, error) {
	return 0, fmt.Errorf("memSystem: %w", errors.ErrUnsupported)
}

func (s *memSession) ID() string { return s.id }

func (s *memSession) KeepAlive(context.Context) error {
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	if s.gone {
		return load.ErrSessionExpired
	}
	return nil
}

func (s *memSession) TryAcquire(ctx context.Context, name string) error {
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	if h := s.sys.holders[name]; h != nil && h != s {
		return fmt.Errorf("mem: %w", load.ErrLockHeld)
	}
	s.sys.holders[name] = s
	return nil
}

// Acquire polls: good enough for a test.
func (s *memSession) Acquire(ctx context.Context, name string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := s.TryAcquire(ctx, name)
		if !errors.Is(err, load.ErrLockHeld) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Microsecond):
		}
	}
}

func (s *memSession) Release(ctx context.Context, name string) error {
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	if s.sys.holders[name] != s {
		return errors.New("mem: not the holder")
	}
	delete(s.sys.holders, name)
	return nil
}

func (s *memSession) Destroy(context.Context) error {
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	for name, h := range s.sys.holders {
		if h == s {
			delete(s.sys.holders, name)
		}
	}
	if !s.gone {
		s.gone = true
		s.sys.sessions--
	}
	return nil
}

// The rows run against any System: every row completes without errors,
// a system that cannot count its writes leaves the entries column empty,
// and every session is destroyed afterwards.
func TestRows_AgainstAnotherSystem(t *testing.T) {
	sys := &memSystem{holders: map[string]*memSession{}}
	cfg := small(nil)
	cfg.System = sys
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rows := allRows(t, cfg)
	if ka := rows[3]; ka.RaftEntries != nil || ka.Lapsed != 0 || ka.WrongExpiries != 0 {
		t.Errorf("keepalive row: entries %v, lapsed %d, wrong %d", ka.RaftEntries, ka.Lapsed, ka.WrongExpiries)
	}
	if sys.sessions != 0 || len(sys.holders) != 0 {
		t.Errorf("%d sessions and %d held locks left behind", sys.sessions, len(sys.holders))
	}
}
