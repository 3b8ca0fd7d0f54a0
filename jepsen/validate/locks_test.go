package validate

import (
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// waitAcq is a blocking acquire (wait 3 s) with the given outcome.
func waitAcq(lock, session string, st history.Status, token uint64, call, ret int64) history.Op {
	if st == history.Unknown {
		ret = history.Infinity
	}
	return history.Op{Lock: lock, Kind: history.Acquire, Session: session, Status: st, Token: token,
		Wait: 3 * time.Second, Call: call, Return: ret}
}

// queueRead is a read that saw the lock's queue.
func queueRead(lock string, call, ret int64, waiters ...string) history.Op {
	return history.Op{Lock: lock, Kind: history.Read, Status: history.OK, Holder: "h", Waiters: waiters, Call: call, Return: ret}
}

func TestCheckFIFO(t *testing.T) {
	ok, fail, unknown := history.OK, history.Fail, history.Unknown
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"granted in queue order", []history.Op{
			waitAcq("q", "a", ok, 10, 0, 100), waitAcq("q", "b", ok, 12, 5, 120), queueRead("q", 20, 30, "a", "b")}, 0},
		{"the later waiter granted first", []history.Op{
			waitAcq("q", "a", ok, 12, 0, 120), waitAcq("q", "b", ok, 10, 5, 100), queueRead("q", 20, 30, "a", "b")}, 1},
		{"three waiters, the last granted first", []history.Op{
			waitAcq("q", "a", ok, 12, 0, 120), waitAcq("q", "b", ok, 14, 1, 140), waitAcq("q", "c", ok, 10, 2, 100),
			queueRead("q", 20, 30, "a", "b", "c")}, 2},
		// Nothing known of the order: no read saw both queued.
		{"no read saw them both", []history.Op{
			waitAcq("q", "a", ok, 12, 0, 120), waitAcq("q", "b", ok, 10, 5, 100), queueRead("q", 20, 30, "a")}, 0},
		// A's wait ran out (or it was cancelled): it left the queue.
		{"the earlier waiter left", []history.Op{
			waitAcq("q", "a", fail, 0, 0, 120), waitAcq("q", "b", ok, 10, 5, 100), queueRead("q", 20, 30, "a", "b")}, 0},
		{"the earlier waiter's outcome unknown", []history.Op{
			waitAcq("q", "a", unknown, 0, 0, 0), waitAcq("q", "b", ok, 10, 5, 100), queueRead("q", 20, 30, "a", "b")}, 0},
		// A's later acquire succeeded, but the place the read saw may be
		// an earlier request's, whose outcome is unknown.
		{"place from an earlier unknown request", []history.Op{
			waitAcq("q", "a", unknown, 0, 0, 0), waitAcq("q", "a", ok, 12, 10, 120), waitAcq("q", "b", ok, 10, 11, 100),
			queueRead("q", 20, 30, "a", "b")}, 0},
		// The read is not inside A's acquire: the place seen is not
		// surely this acquire's.
		{"read before the acquire", []history.Op{
			queueRead("q", 0, 10, "a", "b"), waitAcq("q", "a", ok, 12, 5, 120), waitAcq("q", "b", ok, 10, 1, 100)}, 0},
		{"other locks apart", []history.Op{
			waitAcq("q", "a", ok, 12, 0, 120), waitAcq("r", "b", ok, 10, 5, 100), queueRead("q", 20, 30, "a", "b")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops {
				tt.ops[i].ID = int64(i + 1)
			}
			sortByCall(tt.ops)
			if got := CheckFIFO(tt.ops); got.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", got.Violations, tt.want, got.Details)
			}
		})
	}
}

func sortByCall(ops []history.Op) {
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].Call < ops[j-1].Call; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

// expired is the End of a session nobody destroys, which the server may
// expire from call on.
func expired(lock, session string, delay time.Duration, call int64) history.Op {
	return history.Op{Lock: lock, Kind: history.End, Session: session, Status: history.Unknown, Expire: true,
		LockDelay: delay, Call: call, Return: history.Infinity}
}

func TestCheckLockDelay(t *testing.T) {
	const ms = int64(time.Millisecond)
	d := 500 * time.Millisecond
	rel := history.Op{Lock: "d", Kind: history.Release, Session: "a", Status: history.OK, Call: 100 * ms, Return: 110 * ms}
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"grant after the delay", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1400*ms, 1510*ms)}, 0},
		{"grant inside the delay", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 1},
		// The room left to clock rates: 2% of the delay and 50 ms.
		{"grant inside the room left to clock rates", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1400*ms, 1445*ms)}, 0},
		{"grant just before that room", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1400*ms, 1435*ms)}, 1},
		{"two grants inside the delay", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms), acq("d", "c", 11, 1200*ms, 1210*ms)}, 2},
		// A grant before the holder's (lower token) is none of the delay's business.
		{"earlier grant", []history.Op{acq("d", "b", 3, 0, 5*ms), acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms)}, 0},
		// Released before the end: no delay.
		{"released first", []history.Op{acq("d", "a", 5, 0, 10*ms), rel, expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		{"holding unknown", []history.Op{unknownAcq("d", "a", 0), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		{"refused: held nothing", []history.Op{refused("d", "a", "lock_held", 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		{"no delay", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", 0, 1000*ms),
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		// A destroyed session's End (not Expire) releases at once.
		{"destroyed", []history.Op{acq("d", "a", 5, 0, 10*ms),
			{Lock: "d", Kind: history.End, Session: "a", Status: history.OK, LockDelay: d, Call: 1000 * ms, Return: 1010 * ms},
			acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		{"shared holder", []history.Op{{Lock: "d", Kind: history.Acquire, Session: "a", Mode: "shared", Status: history.OK, Token: 5, Return: 10 * ms},
			expired("d", "a", d, 1000*ms), acq("d", "b", 9, 1040*ms, 1100*ms)}, 0},
		{"other lock", []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", d, 1000*ms),
			acq("e", "b", 9, 1040*ms, 1100*ms)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops {
				tt.ops[i].ID = int64(i + 1)
			}
			sortByCall(tt.ops)
			if got := CheckLockDelay(tt.ops); got.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", got.Violations, tt.want, got.Details)
			}
		})
	}
}

func TestCheckTokens_SharedHoldersShareAToken(t *testing.T) {
	sh := func(session string, tok uint64, call, ret int64) history.Op {
		return history.Op{Lock: "s", Kind: history.Acquire, Session: session, Mode: "shared", Status: history.OK, Token: tok, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"one hand-off to two shared waiters", []history.Op{sh("a", 7, 0, 30), sh("b", 7, 5, 31)}, 0},
		{"shared and exclusive", []history.Op{sh("a", 7, 0, 30), acq("s", "b", 7, 5, 31)}, 1},
		// One entry (a batch of expiries) can hand two locks over: both
		// grants carry its index. Campaign seed 5016 saw it: jepsen/q0
		// and the election jepsen/e0 handed over by one expiry batch.
		{"two locks granted by one entry", []history.Op{sh("a", 7, 0, 30), {Lock: "t", Kind: history.Acquire, Session: "b", Mode: "shared",
			Status: history.OK, Token: 7, Call: 5, Return: 31}}, 0},
		{"two locks, exclusive, one entry", []history.Op{acq("s", "a", 7, 0, 30), acq("t", "b", 7, 5, 31)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops {
				tt.ops[i].ID = int64(i + 1)
			}
			if got := CheckTokens(tt.ops, nil).Violations; got != tt.want {
				t.Fatalf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckLeaseTiming_SharedHolds(t *testing.T) {
	shared := history.Hold{Lock: "l", Session: "a", Token: 5, From: 10, To: 100, Shared: true}
	excl := history.Hold{Lock: "l", Session: "a", Token: 5, From: 10, To: 100}
	sacq := history.Op{Lock: "l", Kind: history.Acquire, Session: "b", Mode: "shared", Status: history.OK, Token: 7, Call: 40, Return: 50}
	tests := []struct {
		name string
		op   history.Op
		hold history.Hold
		want int
	}{
		{"shared beside shared", sacq, shared, 0},
		{"exclusive inside a shared belief", acq("l", "b", 7, 40, 50), shared, 1},
		{"shared inside an exclusive belief", sacq, excl, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLeaseTiming([]history.Op{tt.op}, []history.Hold{tt.hold}).Violations; got != tt.want {
				t.Fatalf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWithChildGrants_FencedLockUnderLinearizability(t *testing.T) {
	const f = traffic.FencedLock
	child := func(session string, tok uint64, call, ret int64) traffic.Grant {
		return traffic.Grant{Client: "child-0", Session: session, Token: tok, Call: call, Return: ret}
	}
	rel := func(session string, call, ret int64) history.Op {
		return history.Op{Lock: f, Kind: history.Release, Session: session, Status: history.OK, Call: call, Return: ret}
	}
	tests := []struct {
		name   string
		ops    []history.Op
		grants []traffic.Grant
		want   int
	}{
		{"child and worker take turns", []history.Op{acq(f, "w", 20, 500, 510), rel("w", 520, 530)},
			[]traffic.Grant{child("c1", 10, 0, 100), child("c2", 30, 600, 700)}, 0},
		// A child's grant with token 10 was acknowledged; a worker invoked
		// after that cannot get 5.
		{"token goes back after a child's grant", []history.Op{acq(f, "w", 5, 500, 510)},
			[]traffic.Grant{child("c1", 10, 0, 100), child("c2", 30, 600, 700)}, 1},
		// The child held c1 from 100 until before its next grant at 900:
		// a worker's grant at 300-310 and its release, then the child's
		// grant with a lower token than the worker's.
		{"child granted a lower token after a worker", []history.Op{acq(f, "w", 20, 300, 310), rel("w", 320, 330)},
			[]traffic.Grant{child("c1", 10, 0, 100), child("c2", 15, 800, 900)}, 1},
		// A worker is told the lock is held while no known holder has it:
		// a child may hold it unreported, so that is no violation.
		{"held refusal with no known holder", []history.Op{refused(f, "w", "lock_held", 0, 10)}, nil, 0},
		{"held refusal on another lock still checked", []history.Op{refused("l", "w", "lock_held", 0, 10)}, nil, 1},
		// A worker's grant while the child's known holding can't have
		// ended: the child's next grant is the same holding repeated.
		{"worker granted inside a child's holding", []history.Op{acq(f, "w", 20, 300, 310)},
			[]traffic.Grant{child("c1", 10, 0, 100), child("c1", 10, 150, 400)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops {
				tt.ops[i].ID = int64(i + 1)
			}
			got := CheckLinearizable(WithChildGrants(tt.ops, f, tt.grants), nil, 10*time.Second, t.TempDir())
			if got.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", got.Violations, tt.want, got.Details)
			}
		})
	}
}
