// Package logthrottle keeps a log line that an outsider can provoke (a
// refused TLS handshake, a refused connection) from flooding the log: a
// Throttle lets one line through per interval and counts the ones it held
// back, so that the next line can say how many there were.
//
// Intervals are measured on the monotonic clock: a step of the wall clock
// neither floods the log nor silences it.
package logthrottle

import (
	"sync/atomic"
	"time"
)

// Throttle lets one event through per interval. The zero value is not
// usable; make one with New. Its methods may be called concurrently.
type Throttle struct {
	every   time.Duration
	last    atomic.Int64 // nanoseconds since epoch (plus one) of the last event let through; 0: none yet
	skipped atomic.Int64
	since   func() time.Duration // monotonic time since epoch; a test sets its own
}

// epoch is the process's reference for monotonic readings kept as
// integers.
var epoch = time.Now()

// New returns a Throttle that lets one event through per every.
func New(every time.Duration) *Throttle {
	return &Throttle{every: every, since: func() time.Duration { return time.Since(epoch) }}
}

// Allow reports whether this event may be logged; if so, held is the number
// of events held back since the last one let through.
func (t *Throttle) Allow() (ok bool, held int64) {
	now := int64(t.since()) + 1 // never 0
	last := t.last.Load()
	if last != 0 && now-last < int64(t.every) || !t.last.CompareAndSwap(last, now) {
		t.skipped.Add(1)
		return false, 0
	}
	return true, t.skipped.Swap(0)
}
