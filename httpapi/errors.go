package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/lockd/lockd/api"
)

// codeStatus is the one table from API error code to HTTP status. retry
// marks the codes that always carry a Retry-After header, one second unless
// the error says otherwise. A code missing from the table is answered as
// internal.
var codeStatus = map[string]struct {
	status int
	retry  bool
}{
	api.CodeBadRequest:     {http.StatusBadRequest, false},
	api.CodeUnauthorized:   {http.StatusUnauthorized, false},
	api.CodeForbidden:      {http.StatusForbidden, false},
	api.CodeNotFound:       {http.StatusNotFound, false},
	api.CodeLockHeld:       {http.StatusConflict, false},
	api.CodeNotHolder:      {http.StatusConflict, false},
	api.CodeLockDelay:      {http.StatusConflict, true},
	api.CodeRepeated:       {http.StatusConflict, false},
	api.CodeSessionExpired: {http.StatusGone, false},
	api.CodeTooLarge:       {http.StatusRequestEntityTooLarge, false},
	api.CodeTooMany:        {http.StatusTooManyRequests, true},
	api.CodeNoLeader:       {http.StatusServiceUnavailable, true},
	api.CodeTimeout:        {http.StatusGatewayTimeout, false},
	api.CodeInternal:       {http.StatusInternalServerError, false},
	api.CodeRemoved:        {http.StatusGone, false},
	api.CodeRequestTimeout: {http.StatusRequestTimeout, false},
	api.CodeOverloaded:     {http.StatusServiceUnavailable, true},
	api.CodeStorageFull:    {http.StatusServiceUnavailable, true},
	api.CodeStorageError:   {http.StatusServiceUnavailable, true},
	api.CodeCASFailed:      {http.StatusConflict, false},
	api.CodeStaleToken:     {http.StatusConflict, false},
	api.CodeCompacted:      {http.StatusGone, false},
	api.CodeQuotaExceeded:  {http.StatusTooManyRequests, false},
}

// internalMessage is all a client learns of an error that is not a
// *api.Error; the error itself goes to the log.
const internalMessage = "internal server error; the details are in the server log"

// invalid returns the error of a request that failed its Validate:
// too_large for a size over a bound (api.SizeError), else bad_request.
func invalid(err error) *api.Error {
	return api.Errorf(api.InvalidCode(err), "%v", err)
}

// badRequest returns a bad_request error with the given message.
func badRequest(format string, args ...any) *api.Error {
	return api.Errorf(api.CodeBadRequest, format, args...)
}

// writeError answers r with err, its status taken from codeStatus.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := publicError(err)
	errorHeaders(w, err)
	s.writeErrorStatus(w, r, codeStatus[e.Code].status, e, err)
}

// publicError returns what the client may see of err: the *api.Error it is
// or wraps, or a generic internal error.
func publicError(err error) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		if _, ok := codeStatus[e.Code]; ok {
			return e
		}
	}
	return &api.Error{Code: api.CodeInternal, Message: internalMessage}
}

// writeErrorStatus writes e with the given status and, when the code calls
// for one, a Retry-After header. cause is the error as the Service returned
// it (nil if it came from this package); 5xx answers are logged with it.
func (s *Server) writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, e *api.Error, cause error) {
	if secs := retryAfter(e); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if status >= 500 {
		s.logFailure(r, status, e, cause)
	}
	s.writeJSON(w, status, e)
}

// logFailure logs a 5xx answer: internal errors at error level with the real
// cause, timeouts at warn. no_leader is expected during every election and
// the lease module logs the leadership changes themselves, so it is only
// worth a debug line, as is a request whose client went away.
func (s *Server) logFailure(r *http.Request, status int, e *api.Error, cause error) {
	level := slog.LevelWarn
	switch e.Code {
	case api.CodeInternal:
		level = slog.LevelError
	case api.CodeNoLeader:
		level = slog.LevelDebug
	}
	if r.Context().Err() != nil {
		level = slog.LevelDebug
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "code", e.Code, "detail", e.Message}
	if cause != nil && cause != error(e) { //nolint:errorlint // identity: log the cause unless it is the very error answered
		attrs = append(attrs, "err", cause)
	}
	s.log.Log(r.Context(), level, "request failed", attrs...)
}

// retryAfter returns the Retry-After seconds for e: its RetryAfter rounded
// up to whole seconds, at least 1; 1 for codes that always carry the header;
// 0 for none.
func retryAfter(e *api.Error) int {
	if e.RetryAfter <= 0 {
		if codeStatus[e.Code].retry {
			return 1
		}
		return 0
	}
	return max(1, int((e.RetryAfter+time.Second-1)/time.Second))
}

// writeJSON writes v as the JSON body with the given status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("cannot encode response", "err", err)
		status = http.StatusInternalServerError
		b, _ = json.Marshal(&api.Error{Code: api.CodeInternal, Message: internalMessage})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
