package load

import (
	"context"
	"time"

	"github.com/lockd/lockd/api"
)

// A System is the lock service the rows measure. lockd over its HTTP API
// is the one used when Config.System is nil; bench/compare adds etcd and
// ZooKeeper through their own clients, so that every system runs the very
// same loops.
type System interface {
	// NewSession creates a session that the system ends if it goes ttl
	// without a renewal. i numbers the session within its row: a system
	// with several endpoints uses it to spread sessions over them
	// (session i talks to endpoint i mod the number of endpoints).
	NewSession(ctx context.Context, i int, ttl time.Duration) (Session, error)
	// Writes returns how many writes the cluster has committed so far
	// (lockd: the leader's Raft commit index), for the keepalive rows'
	// check that renewals write nothing; an error wrapping
	// errors.ErrUnsupported if it cannot tell.
	Writes(ctx context.Context) (uint64, error)
	// Waiters returns how many sessions queue for the lock name, its
	// holders not counted (the waiters row's check that its queue is
	// as deep as asked); an error wrapping errors.ErrUnsupported if the
	// system cannot tell.
	Waiters(ctx context.Context, name string) (int, error)
	// Watch is a blocking read of the lock name through endpoint i (as
	// NewSession spreads sessions): it returns once the lock's index
	// passes index, or wait runs out, with the index it read (the next
	// call's). sent, if not nil, is called once the read is on its way
	// to the system. ErrTooMany if the system refuses to hold one more
	// waiting read; an error wrapping errors.ErrUnsupported if it has no
	// such reads.
	Watch(ctx context.Context, i int, name string, index uint64, wait time.Duration, sent func()) (uint64, error)
}

// A Session is one session of a System. One goroutine uses it at a time.
// Errors that the rows tell apart match ErrLockHeld and ErrSessionExpired
// with errors.Is; any other error counts as a failed request.
type Session interface {
	// ID names the session in error messages.
	ID() string
	// KeepAlive renews the session once; ErrSessionExpired if the system
	// says the session is gone.
	KeepAlive(ctx context.Context) error
	// TryAcquire takes the lock name without waiting; ErrLockHeld if
	// another session holds it.
	TryAcquire(ctx context.Context, name string) error
	// Acquire takes the lock name, waiting up to wait for it (a system
	// whose client cannot bound the wait says so); ErrLockHeld if the
	// wait ran out.
	Acquire(ctx context.Context, name string, wait time.Duration) error
	// Release releases the lock name, which the session holds.
	Release(ctx context.Context, name string) error
	// Destroy ends the session, releasing what it holds and ending its
	// waits.
	Destroy(ctx context.Context) error
}

// The errors a Session's methods return (or wrap) for the outcomes the
// rows count apart from failures. lockd's own answers match them as they
// are (they are *api.Error values with these codes).
var (
	ErrLockHeld       error = &api.Error{Code: api.CodeLockHeld, Message: "lock held by another session"}
	ErrSessionExpired error = &api.Error{Code: api.CodeSessionExpired, Message: "session expired"}
	// ErrTooMany is a System's refusal of one more waiting read (lockd:
	// 429 too_many_requests, beyond --max-blocking-queries).
	ErrTooMany error = &api.Error{Code: api.CodeTooMany, Message: "too many blocking queries"}

	// lockd's answers that nothing was done (no leader now) or that the
	// outcome is unknown, after which the rows create a session again.
	errNoLeader error = &api.Error{Code: api.CodeNoLeader}
	errTimeout  error = &api.Error{Code: api.CodeTimeout}
)

// A LeaseCounter is a System that counts its nodes' failed master-lease
// renewals (lockd: master_lease_failures of GET /v1/cluster, summed over
// the endpoints). The counts are per node since it started, so a row
// reports a difference; a node restarted meanwhile makes it an undercount.
type LeaseCounter interface {
	LeaseFailures(ctx context.Context) (uint64, error)
}

// BatchRenewer is a System that renews several of its sessions in one
// request (lockd's POST /v1/sessions/keepalive), for the keepalive rows
// with Config.KeepaliveBatch above 1.
type BatchRenewer interface {
	// KeepAliveMany renews ss through endpoint i. errs has an entry per
	// session (ErrSessionExpired for one the cluster reports gone); err
	// is the whole request's failure.
	KeepAliveMany(ctx context.Context, i int, ss []Session) (errs []error, err error)
}
