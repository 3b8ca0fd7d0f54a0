package api

import (
	"errors"
	"fmt"
	"time"
)

// Error codes of the HTTP API. httpapi maps each to one HTTP status.
const (
	CodeBadRequest     = "bad_request"
	CodeUnauthorized   = "unauthorized"
	CodeForbidden      = "forbidden"
	CodeNotFound       = "not_found"
	CodeLockHeld       = "lock_held"
	CodeNotHolder      = "not_holder"
	CodeLockDelay      = "lock_delay"
	CodeRepeated       = "request_repeated"
	CodeSessionExpired = "session_expired"
	CodeTooLarge       = "too_large"
	CodeTooMany        = "too_many_requests"
	CodeNoLeader       = "no_leader"
	CodeTimeout        = "timeout"
	CodeInternal       = "internal"
	// CodeRemoved: the node answering was removed from the cluster and
	// serves nothing; ask another member. It applied nothing.
	CodeRemoved = "removed"
	// CodeRequestTimeout: the client did not send the request's body
	// within the node's body timeout. Nothing was done.
	CodeRequestTimeout = "request_timeout"
	// CodeStorageFull: the node's data dir is on a full disk, so the
	// node can neither lead nor follow (/readyz); CodeStorageError: its
	// writes fail otherwise. Nothing was applied.
	CodeStorageFull  = "storage_full"
	CodeStorageError = "storage_error"
	// CodeOverloaded: the node holds as many connections as it allows
	// in total; retry later or ask another member. Nothing was done.
	CodeOverloaded = "overloaded"
	// CodeCASFailed: a put or delete with cas found another modify
	// index (or, for cas 0, a key that exists). Nothing was applied.
	CodeCASFailed = "cas_failed"
	// CodeStaleToken: a write's guard names a fencing token of a lock
	// that a holder with a higher token holds now. Nothing was applied.
	CodeStaleToken = "stale_token"
	// CodeCompacted: a watch asked for events after an index the history
	// no longer reaches (see CompactedError). Nothing was done.
	CodeCompacted = "compacted"
	// CodeQuotaExceeded: a write would take the ACL token that sends it
	// past its max_keys or max_bytes (the keys it owns). Nothing was
	// applied; it succeeds once the token owns less.
	CodeQuotaExceeded = "quota_exceeded"
)

// SizeError is an error of a request's validation about a size over a
// bound (a value longer than MaxKVValueLen): the server answers it
// too_large (413) rather than bad_request.
type SizeError struct{ msg string }

func (e *SizeError) Error() string { return e.msg }

func sizeErrorf(format string, args ...any) error {
	return &SizeError{msg: fmt.Sprintf(format, args...)}
}

// InvalidCode returns the code of a request that failed validation with
// err: CodeTooLarge for a SizeError, else CodeBadRequest.
func InvalidCode(err error) string {
	var se *SizeError
	if errors.As(err, &se) {
		return CodeTooLarge
	}
	return CodeBadRequest
}

// Error is the body of every error response, and the error type the server
// side uses to carry a code to httpapi. RetryAfter, when set, becomes a
// Retry-After header and is not part of the JSON body.
type Error struct {
	Message    string        `json:"error"`
	Code       string        `json:"code"`
	RetryAfter time.Duration `json:"-"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &api.Error{Code: api.CodeLockHeld}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err if it is or wraps an *Error, else "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
