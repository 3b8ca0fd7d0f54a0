package lease

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// leaseLog is the optional record of a node's master lease (Config.LeaseLog)
// that the fault harness reads after a run to check that no two nodes ever
// served under a master lease at the same moment. Each change of the lease
// appends one line:
//
//	<node> <term> <from> <until>
//
// from and until are nanoseconds of the host's CLOCK_MONOTONIC, one clock
// for every process on the host, untouched by the node's own (possibly
// skewed) Clock. A line reads: from the moment from on, until this node's
// next line, it may serve under its lease of term until the moment until;
// until <= from means it does not serve. A line is written when a lease
// round extends the lease, when the node's clock is changed while the
// lease runs (the same lease end, converted again), and when the node
// stops using its lease (term over, lease given up). Every line is one
// write(2) on a file opened for appending: a process killed with SIGKILL
// leaves every line it wrote, and at most the last one cut short.
type leaseLog struct {
	mu   sync.Mutex
	f    *os.File
	id   string
	base time.Time // a reading of time.Now taken together with baseMono
	// baseMono is CLOCK_MONOTONIC at base. Go's monotonic readings come
	// from the same clock, so a real time t is baseMono + t.Sub(base).
	baseMono int64
}

func openLeaseLog(path, id string) (*leaseLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lease: lease log: %w", err)
	}
	l := &leaseLog{f: f, id: id}
	var ts unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lease: lease log: CLOCK_MONOTONIC: %w", err)
	}
	after := time.Now()
	l.base = before.Add(after.Sub(before) / 2)
	l.baseMono = ts.Nano()
	return l, nil
}

// mono converts a real time (one carrying a monotonic reading, as
// time.Now's do) to nanoseconds of CLOCK_MONOTONIC.
func (l *leaseLog) mono(t time.Time) int64 { return l.baseMono + int64(t.Sub(l.base)) }

// record appends the line "from on, this node may serve in term until
// until" (both real times). A nil log records nothing.
func (l *leaseLog) record(term uint64, from, until time.Time) {
	if l == nil {
		return
	}
	f, u := l.mono(from), l.mono(until)
	if u < f {
		u = f
	}
	line := fmt.Sprintf("%s %d %d %d\n", l.id, term, f, u)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_, _ = l.f.WriteString(line) // best effort: a debug aid must not stop the node
	}
}

func (l *leaseLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// realClock is implemented by a Clock that can say at which real time it
// will show a given time of its own (SkewClock).
type realClock interface {
	RealTime(t time.Time) time.Time
}

// realTime returns the real time at which c will show t, at c's current
// offset and rate (t itself for a clock that runs as real time does).
func realTime(c Clock, t time.Time) time.Time {
	if r, ok := c.(realClock); ok {
		return r.RealTime(t)
	}
	return t
}
