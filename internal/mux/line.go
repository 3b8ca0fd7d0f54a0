package mux

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a delay line. A line holds at most lineLimit bytes (plus one
// chunk) per direction of a connection: a writer that outruns the delay
// waits for room, and an inbound line that is full stops reading the
// socket, so TCP's own flow control slows the peer down. The throughput of
// a delayed direction is therefore at most lineLimit per delay.
const (
	lineChunk = 32 << 10
	lineLimit = 1 << 20
)

// chunk is a piece of a byte stream held by a line until due.
type chunk struct {
	b   []byte
	due time.Time
}

// line is the delay line of one direction of one connection: a bounded
// FIFO of chunks, each released no earlier than its due time and never
// before the chunks ahead of it, so the stream keeps its order whatever
// delays its chunks were given. Its producer and consumer are the
// connection's caller on one side and a goroutine of the connection on the
// other (see Conn). Once a connection has a line in a direction, every byte
// in that direction goes through it until the connection is closed.
type line struct {
	mu     sync.Mutex
	q      []chunk
	held   int // bytes in q
	err    error
	errDue time.Time // when err may be reported (inbound: a FIN is delayed too)
	// changed is closed and replaced whenever the line changes (a chunk
	// added or taken, err set, a deadline moved), waking every waiter.
	changed chan struct{}

	// lost counts the bytes a Blackhole or a Drop discarded from this
	// direction, for tests.
	lost atomic.Int64

	// piped is set once the line's goroutine owns the socket's reads
	// (inbound) or writes (outbound); until then deadlines still go to the
	// socket. Written under Conn.dmu.
	piped atomic.Bool
}

func newLine() *line { return &line{changed: make(chan struct{})} }

// notifyLocked wakes every waiter.
func (l *line) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// notify wakes every waiter, so that each looks again at what it waits for.
func (l *line) notify() {
	l.mu.Lock()
	l.notifyLocked()
	l.mu.Unlock()
}

// push appends a copy of b, due at due, without waiting for room.
func (l *line) push(b []byte, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.q = append(l.q, chunk{b: bytes.Clone(b), due: due})
	l.held += len(b)
	l.notifyLocked()
}

// fail ends the line: no chunk is added after err, which waiters see once
// the chunks ahead of it are gone and due has passed. When drop is true,
// the chunks still held are discarded.
func (l *line) fail(err error, due time.Time, drop bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err, l.errDue = err, due
	if drop {
		l.q, l.held = nil, 0
	}
	l.notifyLocked()
}

// discard throws away every chunk held.
func (l *line) discard() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == 0 {
		return
	}
	l.lost.Add(int64(l.held))
	l.q, l.held = nil, 0
	l.notifyLocked()
}

// waitRoom waits until the line holds less than lineLimit bytes. It
// returns the line's error if it has failed, errWaitClosed once done is
// closed and errWaitDeadline once deadline() has passed (zero: no limit).
func (l *line) waitRoom(deadline func() time.Time, done <-chan struct{}) error {
	for {
		l.mu.Lock()
		err, room, ch := l.err, l.held < lineLimit, l.changed
		l.mu.Unlock()
		switch {
		case err != nil:
			return err
		case room:
			return nil
		}
		if err := wait(ch, done, deadline()); err != nil {
			return err
		}
	}
}

// take copies into p from the first chunk if it is due at now, and reports
// how many bytes it copied. When discard is true, due chunks are thrown
// away instead, and take copies nothing. When it copies nothing, it returns
// the time to wait until (the first chunk's due time, or the error's; zero
// when there is nothing to wait for) and the channel that signals a change,
// or the line's error if the line has failed and that is all it holds.
func (l *line) take(p []byte, now time.Time, discard bool) (n int, until time.Time, ch <-chan struct{}, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.q) > 0 && !l.q[0].due.After(now) {
		head := &l.q[0]
		if discard {
			n = len(head.b)
			l.lost.Add(int64(n))
		} else {
			n = copy(p, head.b)
		}
		l.held -= n
		head.b = head.b[n:]
		if len(head.b) == 0 {
			l.q[0] = chunk{}
			l.q = l.q[1:]
		}
		l.notifyLocked()
		if !discard {
			return n, time.Time{}, nil, nil
		}
	}
	switch {
	case len(l.q) > 0:
		until = l.q[0].due
	case l.err != nil && !l.errDue.After(now):
		return 0, time.Time{}, nil, l.err
	case l.err != nil:
		until = l.errDue
	}
	return 0, until, l.changed, nil
}

// next removes and returns the first chunk once it is due, waiting for it
// as long as needed. It returns false once done is closed or the line has
// failed.
func (l *line) next(done <-chan struct{}) ([]byte, bool) {
	for {
		l.mu.Lock()
		if l.err != nil {
			l.mu.Unlock()
			return nil, false
		}
		var until time.Time
		if len(l.q) > 0 {
			head := l.q[0]
			if !head.due.After(time.Now()) {
				l.q[0] = chunk{}
				l.q = l.q[1:]
				l.held -= len(head.b)
				l.notifyLocked()
				l.mu.Unlock()
				return head.b, true
			}
			until = head.due
		}
		ch := l.changed
		l.mu.Unlock()
		if errors.Is(wait(ch, done, until), errWaitClosed) {
			return nil, false
		}
	}
}

// Reasons wait returns early.
var (
	errWaitClosed   = ErrClosed
	errWaitDeadline = os.ErrDeadlineExceeded
)

// wait blocks until ch is closed (nil), done is closed (errWaitClosed) or
// until has passed (errWaitDeadline; zero until means no limit).
func wait(ch <-chan struct{}, done <-chan struct{}, until time.Time) error {
	var timeout <-chan time.Time
	if !until.IsZero() {
		d := time.Until(until)
		if d <= 0 {
			return errWaitDeadline
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-done:
		return errWaitClosed
	case <-timeout:
		return errWaitDeadline
	}
}
