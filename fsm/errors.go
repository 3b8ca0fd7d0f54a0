package fsm

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned in Result.Err. They are deterministic outcomes of a
// command, not failures of the state machine: the state is unchanged when
// one is returned, but for the request number a refused command with a
// new one records (seq.go), so that a late copy of it is refused too.
var (
	// ErrBadCommand: the entry could not be decoded or is missing a field.
	ErrBadCommand = errors.New("fsm: bad command")
	// ErrSessionNotFound: the session does not exist (never did, destroyed or expired).
	ErrSessionNotFound = errors.New("fsm: session not found")
	// ErrSessionExists: a create-session named an id already in use.
	ErrSessionExists = errors.New("fsm: session already exists")
	// ErrLockHeld: the lock is held in a conflicting mode, or others are queued ahead.
	ErrLockHeld = errors.New("fsm: lock held")
	// ErrRepeated: an acquire repeats one already applied (same session,
	// object and request number), and the session neither holds nor waits
	// for the lock now: it is not applied again, and the lock is free.
	ErrRepeated = errors.New("fsm: request repeats one already applied")
	// ErrNotHolder: release, proclaim or resign by a session that does not hold it.
	ErrNotHolder = errors.New("fsm: not the holder")
	// ErrLockDelay: the lock is free but inside the lock-delay of an expired holder.
	// The returned error is a *DelayError that wraps it.
	ErrLockDelay = errors.New("fsm: lock-delay in force")
	// ErrModeConflict: the session already holds the lock, or is queued for
	// it, in the other mode.
	ErrModeConflict = errors.New("fsm: lock held by this session in another mode")
	// ErrQueuedInOtherMode is the ErrModeConflict of a session that is
	// queued for the lock (not holding it) in the other mode.
	ErrQueuedInOtherMode = fmt.Errorf("%w: the session is queued for it in the other mode", ErrModeConflict)
	// ErrStillQueued is the ErrLockHeld of a try (no wait) by a session
	// that is queued for the lock: the try fails, the session keeps its
	// place in the queue.
	ErrStillQueued = fmt.Errorf("%w: the session stays queued for it", ErrLockHeld)
	// ErrLimitConflict is the ErrBadCommand of an acquire whose limit is
	// not the lock's: every holder and waiter of a lock (and the delayed
	// slots its expired holders left) has the same limit, 0 for an
	// exclusive or shared lock.
	ErrLimitConflict = fmt.Errorf("%w: the lock has another limit", ErrBadCommand)
	// ErrBadSnapshot: Restore was given bytes that are not a snapshot this
	// build can read (garbage, unknown version, or inconsistent state).
	ErrBadSnapshot = errors.New("fsm: bad snapshot")
)

// DelayError wraps ErrLockDelay. It names the lock-delay's timer (Ref) and
// its full length; Until is the wall time the leader that started it
// expected it to end, for display: the delay ends when the serving
// leader's timer does.
type DelayError struct {
	Ref    TimerRef
	Length time.Duration
	Until  time.Time
}

func (e *DelayError) Error() string {
	return fmt.Sprintf("%v: %v from entry %d (shown as until %s)", ErrLockDelay, e.Length, e.Ref.Armed, e.Until.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns ErrLockDelay.
func (e *DelayError) Unwrap() error { return ErrLockDelay }

// LimitError wraps ErrLimitConflict: lock Name has limit Limit (0: it is
// not a semaphore) while it exists, and an acquire asked for Asked.
type LimitError struct {
	Name         string
	Limit, Asked int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s has limit %d while it has holders, waiters or delayed slots, and this acquire asks for %d (0: not a semaphore)",
		ErrLimitConflict, e.Name, e.Limit, e.Asked)
}

// Unwrap returns ErrLimitConflict.
func (e *LimitError) Unwrap() error { return ErrLimitConflict }
