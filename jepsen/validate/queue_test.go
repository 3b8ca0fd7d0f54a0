package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

const qms = int64(time.Millisecond)

// readOf is read r seeing the holder's token tok.
func readOf(r history.Op, tok uint64) history.Op {
	r.Token = tok
	return r
}

// giveBack is the client library's release after an acquire of unknown
// outcome, sent from call on.
func giveBack(lock, session string, call int64) history.Op {
	return history.Op{Lock: lock, Kind: history.Release, Session: session, Status: history.Unknown, Call: call, Return: history.Infinity}
}

// skipped is issue 24's breach: A queued ahead of B (a read saw both), B
// granted 100 ms later, while A still waited: A's wait of 3 s had not run
// out, its session had not ended, it had not released. Its acquire ends
// unknown at 3 s (the worker gave up), its library's give-back follows.
// The holder h's acquire and release make the history whole.
func skipped() []history.Op {
	return withIDs(
		acq("q", "h", 5, 0, 1*qms),
		waitAcq("q", "a", history.Unknown, 0, 2*qms, 0),
		waitAcq("q", "b", history.OK, 10, 3*qms, 100*qms),
		readOf(queueRead("q", 4*qms, 5*qms, "a", "b"), 5),
		release("q", "h", 50*qms, 60*qms),
		giveBack("q", "a", 3002*qms),
		history.Op{Lock: "q", Kind: history.End, Session: "a", Status: history.OK, Call: 3010 * qms, Return: 3020 * qms},
	)
}

// TestCheckQueue_SkippedWaiter shows the breach passing every checker of
// the old harness (fifo compares only waiters that were granted; the lock
// model has no queue) and caught by the queue checker.
func TestCheckQueue_SkippedWaiter(t *testing.T) {
	ops := skipped()
	if v := CheckFIFO(ops); v.Violations != 0 {
		t.Fatalf("fifo caught it already: %v", v.Details)
	}
	if v := CheckLinearizable(ops, nil, 10*time.Second, t.TempDir()); v.Violations != 0 {
		t.Fatalf("linearizability caught it already: %v", v.Details)
	}
	v := CheckQueue(ops)
	if v.Violations != 1 || !strings.Contains(v.Details[0], "waiter skipped") {
		t.Fatalf("queue: %s %v", v, v.Details)
	}
}

// TestCheckQueue_DroppedWaiter: A's blocking acquire refused (its wait
// ran out, the server says) half a second into a wait of 3 s, with no
// session end and no release: A was dropped from the queue. No later
// waiter needs to be granted for it to show.
func TestCheckQueue_DroppedWaiter(t *testing.T) {
	ops := withIDs(acq("q", "h", 5, 0, 1*qms),
		waitAcq("q", "a", history.Fail, 0, 2*qms, 500*qms),
		waitAcq("q", "b", history.Unknown, 0, 3*qms, 0),
		queueRead("q", 4*qms, 5*qms, "a", "b"))
	ops[1].Code = "lock_held"
	if v := CheckFIFO(ops); v.Violations != 0 {
		t.Fatalf("fifo caught it already: %v", v.Details)
	}
	v := CheckQueue(ops)
	if v.Violations != 1 || !strings.Contains(v.Details[0], "waiter dropped") {
		t.Fatalf("queue: %s %v", v, v.Details)
	}
}

func TestCheckQueue(t *testing.T) {
	ok, fail, unknown := history.OK, history.Fail, history.Unknown
	end := func(session string, call int64) history.Op {
		return history.Op{Lock: "q", Kind: history.End, Session: session, Status: history.OK, Call: call, Return: call + qms}
	}
	shared := func(op history.Op) history.Op { op.Mode = "shared"; return op }
	refusedAt := func(session string, call, ret int64) history.Op {
		op := waitAcq("q", session, fail, 0, call, ret)
		op.Code = "lock_held"
		return op
	}
	read := queueRead("q", 4*qms, 5*qms, "a", "b")
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"both granted in order", []history.Op{waitAcq("q", "a", ok, 10, 2*qms, 90*qms), waitAcq("q", "b", ok, 12, 3*qms, 100*qms), read}, 0},
		{"skipped", skipped(), 1},
		// A's wait ran out (3 s, less 2% and 50 ms), then B was granted.
		{"the earlier waiter's wait ran out first", []history.Op{refusedAt("a", 2*qms, 3010*qms),
			waitAcq("q", "b", ok, 10, 3*qms, 3000*qms), read}, 0},
		{"granted just before the earlier waiter's wait could run out", []history.Op{refusedAt("a", 2*qms, 3010*qms),
			waitAcq("q", "b", ok, 10, 3*qms, 2880*qms), read}, 1},
		{"the earlier waiter released first", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0), release("q", "a", 80*qms, 85*qms),
			waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 0},
		{"the earlier waiter's session ended first", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0), end("a", 80*qms),
			waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 0},
		// The library's give-back as the harness recorded it before
		// issue 24: invoked with the acquire, it may have landed at once.
		{"a give-back from the acquire's invocation", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0), giveBack("q", "a", 2*qms),
			waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 0},
		{"a refused release is no reason", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0),
			{Lock: "q", Kind: history.Release, Session: "a", Status: fail, Code: "not_holder", Call: 80 * qms, Return: 85 * qms},
			waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 1},
		{"dropped", []history.Op{refusedAt("a", 2*qms, 500*qms), read}, 1},
		{"dropped when its session ended", []history.Op{refusedAt("a", 2*qms, 500*qms), end("a", 400*qms), read}, 0},
		// Shared waiters: a shared head is granted with the shared waiters
		// right behind it; one granted unbeknownst to its client admits B.
		{"shared behind a shared waiter of unknown outcome", []history.Op{shared(waitAcq("q", "a", unknown, 0, 2*qms, 0)),
			shared(waitAcq("q", "b", ok, 10, 3*qms, 100*qms)), read}, 0},
		{"shared behind a shared waiter refused", []history.Op{shared(refusedAt("a", 2*qms, 3010*qms)),
			shared(waitAcq("q", "b", ok, 10, 3*qms, 100*qms)), read}, 1},
		{"exclusive behind a shared waiter of unknown outcome", []history.Op{shared(waitAcq("q", "a", unknown, 0, 2*qms, 0)),
			waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 1},
		// The order is known only from a read that saw both.
		{"no read saw them both", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0), waitAcq("q", "b", ok, 10, 3*qms, 100*qms),
			queueRead("q", 4*qms, 5*qms, "a")}, 0},
		{"the later one seen behind", []history.Op{waitAcq("q", "a", ok, 10, 2*qms, 100*qms), waitAcq("q", "b", unknown, 0, 3*qms, 0),
			queueRead("q", 4*qms, 5*qms, "a", "b")}, 0},
		// A's place may be an earlier request's, whose outcome is unknown
		// and whose wait is not known.
		{"place from an earlier unknown request", []history.Op{{Lock: "q", Kind: history.Acquire, Session: "a", Status: unknown, Return: history.Infinity},
			waitAcq("q", "a", unknown, 0, 2*qms, 0), waitAcq("q", "b", ok, 10, 3*qms, 100*qms), read}, 0},
		{"other locks apart", []history.Op{waitAcq("q", "a", unknown, 0, 2*qms, 0), waitAcq("r", "b", ok, 10, 3*qms, 100*qms), read}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckQueue(withIDs(tt.ops...))
			if v.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
		})
	}
}
