// Package history records what the harness's clients did and what the
// faults did, on one monotonic clock: every operation's invocation and
// completion, with an outcome of ok, fail (surely not applied) or unknown
// (timeout, lost connection: it may or may not have taken effect), and the
// intervals during which a client's library believed it held a lock.
//
// It records; it does not judge. The checkers in package validate read it.
package history

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Infinity is the completion time of an operation whose outcome is
// unknown: it may take effect at any moment after its invocation.
const Infinity int64 = math.MaxInt64

// Kind is what an operation does to a lock.
type Kind string

// Operation kinds. Elections are recorded as locks (campaign = acquire,
// resign = release, leader = read), since an election is an exclusive lock
// with a value, and the value is Op.Value; proclaim is their own kind.
const (
	Acquire Kind = "acquire"
	Release Kind = "release"
	Read    Kind = "read"
	Check   Kind = "check"
	// Proclaim changes the value of an election its session leads.
	Proclaim Kind = "proclaim"
	// End is the end of a session (destroyed, or expired): from its
	// invocation on, the server may drop the session's holdings at any
	// moment. Expiry has no completion (Return is Infinity).
	End Kind = "end"
)

// Status is the outcome of an operation.
type Status string

// Outcomes.
const (
	OK      Status = "ok"
	Fail    Status = "fail"
	Unknown Status = "unknown"
)

// Op is one operation on one lock.
type Op struct {
	ID      int64
	Client  int    // worker number, for the visualization
	Lock    string // lock (or election) name
	Kind    Kind
	Session string
	// Token is the acquire's token (ok), the token a check asked about, or
	// the holder's token a read saw.
	Token uint64
	// Holder is the session a read saw holding the lock ("" for none).
	Holder string
	// Valid is a check's answer.
	Valid bool
	// Mode is an acquire's mode: "" or "exclusive", or "shared".
	Mode string
	// Wait is how long a blocking acquire asked the server to queue it
	// (0 for a try).
	Wait time.Duration
	// Waiters are the sessions a read saw queued for the lock, in order.
	Waiters []string
	// LockDelay is, on an End that can only be an expiry (Expire), the
	// lock-delay of the session it ends.
	LockDelay time.Duration
	// Expire marks an End of a session nobody destroys: the server can only
	// expire it, so the locks it held get its lock-delay.
	Expire bool
	// Value is an election's value: the one a campaign or a proclaim
	// asked for, or the one a read saw (elections only).
	Value string `json:",omitempty"`
	// Code is the error code of a failed operation.
	Code   string
	Status Status
	Call   int64 // ns on the harness clock
	Return int64 // ns on the harness clock; Infinity when unknown
	Node   string
	Err    string
}

// Hold is an interval during which a client's library believed its
// session held a lock: from the acquire's return to the moment the belief
// ended (Lost closed, Held false, or Unlock invoked).
type Hold struct {
	Client  int
	Lock    string
	Session string
	Token   uint64
	From    int64
	To      int64 // Infinity if the belief never ended in the run
	// Paused is set when the harness paused this client during the hold,
	// and PausedAt is when the pause began (0: unknown). A paused process
	// cannot notice its loss, which is what fencing is for: the
	// lease-timing checker counts such a hold only up to PausedAt, and
	// leaves it out when PausedAt is unknown.
	Paused   bool
	PausedAt int64
	// Shared is set for a shared holding, which other shared ones may
	// overlap.
	Shared bool
}

// StaleRead is one ?stale read of a lock, answered by one node from its
// own state. Stale reads may lag, so they stay out of the operations the
// linearizability checker reads; the stale-reads checker reads them.
type StaleRead struct {
	Client int
	Node   string
	// Proc identifies the node's process that answered (its pid, the same
	// before and after the read): a restarted process rebuilds its state
	// from the log and may start behind where it was.
	Proc   int
	Lock   string
	Index  uint64 // the lock's modify index the node answered
	Holder string // the first holder's session, "" when free
	Token  uint64 // the first holder's token
	Call   int64
	Return int64
}

// Ack is a write the cluster acknowledged at Return, applied at Index: a
// stale read of Lock invoked well after Return on a caught-up node must
// show Index or later.
type Ack struct {
	Lock   string
	Index  uint64
	Return int64
	// Run marks an ack recorded while the workloads and faults ran (a
	// ?consistent read's index), rather than once the cluster was healed
	// and every node caught up: a node may be cut off from it.
	Run bool `json:",omitempty"`
}

// Event is one entry of the fault timeline.
type Event struct {
	At   int64
	What string
}

// Recorder collects a run's history. It is safe for concurrent use.
type Recorder struct {
	start  time.Time
	nextID atomic.Int64
	mu     sync.Mutex
	ops    []Op
	holds  []Hold
	events []Event
	stale  []StaleRead
	acks   []Ack
	kv     []KVOp
}

// NewRecorder returns a Recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now returns the harness clock: monotonic nanoseconds since the start.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// At converts a time.Time carrying a monotonic reading to the harness clock.
func (r *Recorder) At(t time.Time) int64 { return int64(t.Sub(r.start)) }

// Start returns the wall time the clock started.
func (r *Recorder) Start() time.Time { return r.start }

// Invoke stamps op's invocation and returns it for Complete.
func (r *Recorder) Invoke(op Op) Op {
	op.ID = r.nextID.Add(1)
	op.Call = r.Now()
	return op
}

// Complete stamps op's completion with st and records it. An Unknown op
// gets Return Infinity.
func (r *Recorder) Complete(op Op, st Status) {
	op.Status = st
	if st == Unknown {
		op.Return = Infinity
	} else {
		op.Return = r.Now()
	}
	r.Add(op)
}

// Add records a fully formed op.
func (r *Recorder) Add(op Op) {
	if op.ID == 0 {
		op.ID = r.nextID.Add(1)
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// AddHold records a belief interval.
func (r *Recorder) AddHold(h Hold) {
	r.mu.Lock()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
}

// AddStaleRead records a stale read.
func (r *Recorder) AddStaleRead(s StaleRead) {
	r.mu.Lock()
	r.stale = append(r.stale, s)
	r.mu.Unlock()
}

// StaleReads returns the recorded stale reads ordered by invocation.
func (r *Recorder) StaleReads() []StaleRead {
	r.mu.Lock()
	out := append([]StaleRead(nil), r.stale...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// AddAck records an acknowledged write for the stale-reads checker's lag
// bound.
func (r *Recorder) AddAck(a Ack) {
	r.mu.Lock()
	r.acks = append(r.acks, a)
	r.mu.Unlock()
}

// Acks returns the recorded acknowledged writes.
func (r *Recorder) Acks() []Ack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Ack(nil), r.acks...)
}

// Eventf adds an entry to the fault timeline.
func (r *Recorder) Eventf(format string, args ...any) {
	e := Event{At: r.Now(), What: fmt.Sprintf(format, args...)}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Ops returns the recorded operations ordered by invocation.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	out := append([]Op(nil), r.ops...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// Holds returns the recorded belief intervals.
func (r *Recorder) Holds() []Hold {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Hold(nil), r.holds...)
}

// Events returns the fault timeline in order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	out := append([]Event(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// sortByCall sorts s by the invocation time call gives, stably.
func sortByCall[T any](s []T, call func(T) int64) {
	sort.SliceStable(s, func(i, j int) bool { return call(s[i]) < call(s[j]) })
}

// Seconds formats a harness time for people.
func Seconds(t int64) string {
	if t == Infinity {
		return "inf"
	}
	return fmt.Sprintf("%.3fs", float64(t)/1e9)
}

// Monotonic reads the system's monotonic clock (CLOCK_MONOTONIC), which
// every process of the machine shares: a child process stamps its
// operations on the harness clock with it (see ClockBase).
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("history: CLOCK_MONOTONIC: %v", err))
	}
	return ts.Nano()
}

// ClockBase is the reading of Monotonic at the recorder's time 0: a time
// t read with Monotonic is t - ClockBase on the harness clock.
func (r *Recorder) ClockBase() int64 {
	m := Monotonic()
	return m - r.Now()
}
