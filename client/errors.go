package client

import (
	"errors"

	"github.com/lockd/lockd/api"
)

// Errors. The API errors compare by code with errors.Is, so
// errors.Is(err, client.ErrLockHeld) holds for any lock_held answer; the
// *api.Error itself carries the server's message.
var (
	// ErrLockHeld: the lock is held by another session (or others queue ahead).
	ErrLockHeld error = &api.Error{Code: api.CodeLockHeld, Message: "lock held"}
	// ErrRepeated: the acquire repeated one of this session already applied
	// (a retry whose first answer was lost) and the lock is free now; the
	// repeat is not applied again. A new Lock or TryLock sends a new request.
	// From a KV write of a session: the write was applied once, by an
	// earlier attempt whose answer was lost (see KV).
	ErrRepeated error = &api.Error{Code: api.CodeRepeated, Message: "request repeats one already applied"}
	// ErrNotHolder: the session does not hold the lock or lead the election.
	ErrNotHolder error = &api.Error{Code: api.CodeNotHolder, Message: "not the holder"}
	// ErrLockDelay: the lock is inside the lock-delay of an expired holder.
	ErrLockDelay error = &api.Error{Code: api.CodeLockDelay, Message: "lock-delay in force"}
	// ErrSessionExpired: the server no longer knows the session.
	ErrSessionExpired error = &api.Error{Code: api.CodeSessionExpired, Message: "session expired"}
	// ErrNoLeader: no node could serve the request (election in progress).
	ErrNoLeader error = &api.Error{Code: api.CodeNoLeader, Message: "no leader"}
	// ErrTimeout: the cluster did not commit in time; the outcome is unknown.
	ErrTimeout error = &api.Error{Code: api.CodeTimeout, Message: "timeout"}
	// ErrBadRequest: the server refused the request as malformed.
	ErrBadRequest error = &api.Error{Code: api.CodeBadRequest, Message: "bad request"}
	// ErrKeyNotFound: the key does not exist (KV.Get). It matches any
	// not_found answer.
	ErrKeyNotFound error = &api.Error{Code: api.CodeNotFound, Message: "key not found"}
	// ErrCASFailed: a write with WithCAS (or KV.CAS) found the key at
	// another modify index, or, for 0, found it; nothing was written.
	ErrCASFailed error = &api.Error{Code: api.CodeCASFailed, Message: "cas failed"}
	// ErrCompacted: a watch asked for events from an index the server's
	// history no longer reaches. The error is an *api.CompactedError,
	// whose Oldest is the oldest index a watch may start after: read the
	// keys again and watch from the index of that read.
	ErrCompacted error = &api.Error{Code: api.CodeCompacted, Message: "history compacted"}
	// ErrStaleToken: a fencing token lower than one already seen. Fence
	// refuses such a token with it; the cluster refuses a write guarded
	// by it (WithGuard, FencedBy) with the stale_token answer, which
	// matches it too.
	ErrStaleToken error = &api.Error{Code: api.CodeStaleToken, Message: "client: stale fencing token"}
	// ErrQuotaExceeded: a KV write would take the ACL token the client
	// sends past its max_keys or max_bytes (what it owns of the
	// namespace); nothing was written. It is not retried: it succeeds
	// once the token owns less (SelfToken shows what it owns).
	ErrQuotaExceeded error = &api.Error{Code: api.CodeQuotaExceeded, Message: "quota exceeded"}
	// ErrTooLarge: the request, or a value in it, is over the server's
	// bound (api.MaxKVValueLen for a value); nothing was written.
	ErrTooLarge error = &api.Error{Code: api.CodeTooLarge, Message: "too large"}

	// ErrSessionLost: the session's local deadline passed or the server
	// said it is gone; everything built on it is lost.
	ErrSessionLost = errors.New("client: session lost")
	// ErrNotLocked: Unlock or Token on a Mutex that does not hold its lock.
	ErrNotLocked = errors.New("client: mutex not locked")
	// ErrNotLeader: Proclaim or Resign on an Election this session does not lead.
	ErrNotLeader = errors.New("client: not the election leader")
	// ErrNoElectionLeader: nobody leads the election.
	ErrNoElectionLeader = errors.New("client: election has no leader")
	// ErrNoEndpoints: the Client was given no address.
	ErrNoEndpoints = errors.New("client: no endpoints")
)
