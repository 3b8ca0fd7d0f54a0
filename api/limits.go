package api

import "time"

// Defaults and bounds of the API. The server fills in defaults for omitted
// fields and answers bad_request outside the bounds.
const (
	// DefaultTTL is a session's TTL when the request names none: long enough
	// to ride out a leader failover and a few lost keepalives.
	DefaultTTL = 15 * time.Second
	// MinTTL is the shortest TTL: below it a keepalive every TTL/3 cannot
	// survive one slow round trip.
	MinTTL = 1 * time.Second
	// MaxTTL is the longest TTL.
	MaxTTL = 24 * time.Hour
	// DefaultLockDelay is how long a lock of an expired session stays
	// ungrantable, so that a paused holder's in-flight writes drain first.
	DefaultLockDelay = 5 * time.Second
	// MaxLockDelay is the longest lock-delay.
	MaxLockDelay = 60 * time.Second
	// MaxLimit is the largest limit of a semaphore (an acquire's limit):
	// every hand-off and read of a semaphore handles its holders, so they
	// are bounded to keep both short.
	MaxLimit = 1024
	// MaxWait is the longest an acquire or campaign may block.
	MaxWait = 5 * time.Minute
	// MaxQueryWait is the longest a blocking query may wait.
	MaxQueryWait = 5 * time.Minute
	// MaxBody is the largest request body, in bytes.
	MaxBody = 64 << 10
	// MaxValueLen is the longest election value, in bytes: enough for an
	// address or a small JSON document, small enough that every read of an
	// election stays cheap.
	MaxValueLen = 4 << 10
	// MaxSessionNameLen is the longest session name, in bytes. The name is a
	// free-form label for operators and is not interpreted.
	MaxSessionNameLen = 256
	// DefaultListLimit is the page size of a list whose query names none:
	// every list of a cluster with up to that many sessions, locks or
	// elections fits one page, as it did before lists had pages.
	DefaultListLimit = 1000
	// MaxListLimit is the largest page. A page is read and encoded in one
	// go on the node that answers, so it is bounded to keep that short.
	MaxListLimit = 10000

	// MaxKeepAliveIDs bounds the sessions one POST /v1/sessions/keepalive
	// renews: their ids fit MaxBody with room to spare.
	MaxKeepAliveIDs = 1000

	// MaxKVValueLen is the longest value of a key of the namespace, in
	// bytes (fsm.MaxValueLen).
	MaxKVValueLen = 256 << 10
	// MaxKVBody is the largest body of PUT /v1/kv/{key}: a value of
	// MaxKVValueLen in base64 (4/3 of it) and the other fields.
	MaxKVBody = 384 << 10
	// MaxTxnBody is the largest body of POST /v1/txn, all its values
	// together in base64.
	MaxTxnBody = 2 << 20
	// MaxTxnOps bounds a transaction's compares and operations, both
	// branches counted (fsm.MaxTxnOps).
	MaxTxnOps = 128
	// DefaultKVListLimit is the page size of GET /v1/kv whose query names
	// none, and MaxKVListLimit the largest: values are up to 256 KiB, so
	// pages of keys are smaller than those of locks.
	DefaultKVListLimit = 100
	MaxKVListLimit     = 1000
	// MaxKVPageBytes bounds the values of one page of keys: a page stops
	// early, with a next cursor, once its values pass it.
	MaxKVPageBytes = 4 << 20
	// DefaultWatchLimit is the most events a watch answers at once when
	// its query names no limit, and MaxWatchLimit the largest limit. One
	// entry's events are never split, so an answer may hold more.
	DefaultWatchLimit = 100
	MaxWatchLimit     = 1000
)
