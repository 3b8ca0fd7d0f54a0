package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/connlimit"
)

// DefaultBodyTimeout is how long a client may take to send a request's
// body once its headers arrived (Config.BodyTimeout).
const DefaultBodyTimeout = 10 * time.Second

// overLimit answers a request whose connection went past one of the
// node's connection limits (internal/connlimit): 429 too_many_requests
// past the per-client limit, 503 overloaded past the total, and closes the
// connection after the answer. It reports whether it answered.
func (s *Server) overLimit(w http.ResponseWriter, r *http.Request) bool {
	var e *api.Error
	switch connlimit.OverOf(r.Context()) {
	case "":
		return false
	case connlimit.OverPerClient:
		e = api.Errorf(api.CodeTooMany, "this client has as many connections open to this node as it may; reuse them (keep-alive) or close some")
	default:
		e = api.Errorf(api.CodeOverloaded, "this node holds as many connections as it allows; retry later or ask another member")
	}
	w.Header().Set("Connection", "close")
	if secs := retryAfter(e); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	s.writeJSON(w, codeStatus[e.Code].status, e) // not logged: the listener's counter and throttled warning say it
	return true
}

// limitBody gives r's body s.bodyTimeout to arrive: the connection's read
// deadline is set now and cleared when the body ends, so that a blocking
// request's wait, which follows, is not cut short (net/http's ReadTimeout
// would cancel it). A body that does not arrive in time fails its read
// with a timeout, answered 408 request_timeout, and the connection is
// closed; a body that the handler never reads is drained by net/http
// under the same deadline. Connections that cannot take a deadline (the
// peer port's forwarded requests, whose bodies arrive whole) are left
// alone.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) {
	if s.bodyTimeout <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: s.bodyTimeout, timedOut: s.countBodyTimeout}
}

// countBodyTimeout counts a body that did not arrive in time.
func (s *Server) countBodyTimeout() {
	if s.metrics != nil {
		s.metrics.bodyTimeouts.Inc()
	}
}

// deadlineBody clears its connection's read deadline once the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	timeout  time.Duration
	timedOut func()
	once     sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.once.Do(b.timedOut) // the connection is done for
		err = &bodyTimeout{err: err, after: b.timeout}
	default: // the body's end (or another error): no deadline from here on
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// bodyTimeout is the error of a body read past the body timeout.
type bodyTimeout struct {
	err   error
	after time.Duration
}

func (e *bodyTimeout) Error() string { return e.err.Error() }
func (e *bodyTimeout) Unwrap() error { return e.err }

// bodyTimeoutOf returns the timeout a body read failed past, or the
// default.
func bodyTimeoutOf(err error) time.Duration {
	var bt *bodyTimeout
	if errors.As(err, &bt) {
		return bt.after
	}
	return DefaultBodyTimeout
}
