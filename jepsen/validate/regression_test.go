package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// regression is one entry of the checkers' regression suite: a small
// hand-made history with a breach its checker must catch, and a clean
// control of the same shape it must pass, having checked something.
type regression struct {
	checker, breach string
	caught, control func(t *testing.T) Verdict
}

// withIDs numbers ops in order, as the recorder does.
func withIDs(ops ...history.Op) []history.Op {
	for i := range ops {
		ops[i].ID = int64(i + 1)
	}
	sortByCall(ops)
	return ops
}

func release(lock, session string, call, ret int64) history.Op {
	return history.Op{Lock: lock, Kind: history.Release, Session: session, Status: history.OK, Call: call, Return: ret}
}

// regressions are the suite, one entry per breach, old and new: the
// breach a checker was written for, and each one an audit found it
// blind to (a token going back across locks, a window widened past a
// refusal, the fenced lock's grant order, Observe going back). The table
// tests of each checker (TestCheck*) hold more cases around each.
var regressions = []regression{
	{Linearizability, "two sessions granted one exclusive lock at once",
		func(t *testing.T) Verdict {
			return CheckLinearizable(withIDs(acq("l", "a", 5, 0, 10), acq("l", "b", 7, 20, 30)), nil, 10*time.Second, t.TempDir())
		},
		func(t *testing.T) Verdict {
			return CheckLinearizable(withIDs(acq("l", "a", 5, 0, 10), release("l", "a", 12, 15), acq("l", "b", 7, 20, 30)), nil, 10*time.Second, t.TempDir())
		}},
	{Linearizability, "an election's leader read misses an acknowledged proclaim",
		func(t *testing.T) Verdict {
			return CheckElections(withIDs(
				history.Op{Lock: "e", Kind: history.Acquire, Session: "a", Value: "a1", Token: 5, Status: history.OK, Call: 0, Return: 10},
				history.Op{Lock: "e", Kind: history.Proclaim, Session: "a", Value: "a2", Status: history.OK, Call: 20, Return: 30},
				history.Op{Client: 9, Lock: "e", Kind: history.Read, Holder: "a", Value: "a1", Token: 5, Status: history.OK, Call: 40, Return: 50}),
				map[string]bool{"e": true}, 10*time.Second, t.TempDir())
		},
		func(t *testing.T) Verdict {
			return CheckElections(withIDs(
				history.Op{Lock: "e", Kind: history.Acquire, Session: "a", Value: "a1", Token: 5, Status: history.OK, Call: 0, Return: 10},
				history.Op{Lock: "e", Kind: history.Proclaim, Session: "a", Value: "a2", Status: history.OK, Call: 20, Return: 30},
				history.Op{Client: 9, Lock: "e", Kind: history.Read, Holder: "a", Value: "a2", Token: 5, Status: history.OK, Call: 40, Return: 50}),
				map[string]bool{"e": true}, 10*time.Second, t.TempDir())
		}},
	{Tokens, "a token lower than one acknowledged before, on another lock",
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(acq("l", "a", 7, 0, 10), acq("m", "b", 5, 20, 30)), nil)
		},
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(acq("l", "a", 5, 0, 10), acq("m", "b", 7, 20, 30)), nil)
		}},
	{Tokens, "a window widened past a definite refusal",
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(unknownAcq("l", "a", 0), acq("m", "b", 9, 5, 10), refused("l", "a", "lock_held", 20, 30),
				acq("l", "a", 4, 40, 50)), nil)
		},
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(unknownAcq("l", "a", 0), refused("l", "a", "lock_held", 20, 30), acq("m", "b", 9, 25, 35),
				acq("l", "a", 8, 40, 50)), nil)
		}},
	{Tokens, "a child fence client granted a lower token than another lock's acknowledged grant (issue 24: ordered for uniqueness only)",
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(acq("l", "a", 100, 0, 10)), []ExtraGrant{{Lock: traffic.FencedLock, Session: "c", Token: 50, Call: 20, Return: 30}})
		},
		func(*testing.T) Verdict {
			return CheckTokens(withIDs(acq("l", "a", 100, 0, 10)), []ExtraGrant{{Lock: traffic.FencedLock, Session: "c", Token: 150, Call: 20, Return: 30}})
		}},
	{LeaseTiming, "a grant while another client believed it held the lock",
		func(*testing.T) Verdict {
			return CheckLeaseTiming(withIDs(acq("l", "b", 7, 40, 50)), []history.Hold{{Lock: "l", Session: "a", Token: 5, From: 10, To: 100}})
		},
		func(*testing.T) Verdict {
			return CheckLeaseTiming(withIDs(acq("l", "b", 7, 90, 110)), []history.Hold{{Lock: "l", Session: "a", Token: 5, From: 10, To: 100}})
		}},
	{Fencing, "the resource accepted a stale holder's write",
		func(*testing.T) Verdict {
			return CheckFencing([]traffic.Write{{Client: "a", Token: 5, Accepted: true, At: 10}, {Client: "b", Token: 7, Accepted: true, At: 30},
				{Client: "a", Token: 5, Accepted: true, At: 50}},
				[]traffic.Grant{{Client: "a", Session: "a", Token: 5, Call: 0, Return: 5}, {Client: "b", Session: "b", Token: 7, Call: 20, Return: 25}})
		},
		func(*testing.T) Verdict {
			return CheckFencing([]traffic.Write{{Client: "a", Token: 5, Accepted: true, At: 10}, {Client: "b", Token: 7, Accepted: true, At: 30},
				{Client: "a", Token: 5, Accepted: false, At: 50}},
				[]traffic.Grant{{Client: "a", Session: "a", Token: 5, Call: 0, Return: 5}, {Client: "b", Session: "b", Token: 7, Call: 20, Return: 25}})
		}},
	{Fencing, "a newer holder of the fenced lock granted a lower token (the resource refusing it, rightly)",
		func(*testing.T) Verdict {
			return CheckFencing([]traffic.Write{{Client: "a", Token: 10, Accepted: true, At: 10}, {Client: "b", Token: 5, At: 40}},
				[]traffic.Grant{{Client: "a", Session: "a", Token: 10, Call: 0, Return: 5}, {Client: "b", Session: "b", Token: 5, Call: 20, Return: 30}})
		},
		func(*testing.T) Verdict {
			return CheckFencing([]traffic.Write{{Client: "a", Token: 5, Accepted: true, At: 10}, {Client: "b", Token: 10, Accepted: true, At: 40}},
				[]traffic.Grant{{Client: "a", Session: "a", Token: 5, Call: 0, Return: 5}, {Client: "b", Session: "b", Token: 10, Call: 20, Return: 30}})
		}},
	{Leaders, "two leaders in one term",
		func(*testing.T) Verdict {
			return CheckLeaders([]Sample{{Round: 0, Node: "n1", State: "Leader", Term: 2}, {Round: 1, Node: "n2", State: "Leader", Term: 2}}, false)
		},
		func(*testing.T) Verdict {
			return CheckLeaders([]Sample{{Round: 0, Node: "n1", State: "Leader", Term: 2}, {Round: 1, Node: "n2", State: "Leader", Term: 3}}, false)
		}},
	{Events, "a workload saw Observe go back",
		func(*testing.T) Verdict {
			return CheckEvents([]history.Event{{At: 1, What: "cluster up"}, {At: 2, What: ViolationPrefix + " observe went back: token 7 after 9"}})
		},
		func(*testing.T) Verdict {
			return CheckEvents([]history.Event{{At: 1, What: "cluster up"}, {At: 2, What: "heal all: no " + ViolationPrefix + " here"}})
		}},
	{MasterLease, "two nodes serving under a master lease at once (terms 2 and 3)",
		func(*testing.T) Verdict {
			return CheckMasterLease([]LeaseLine{{Node: "n1", Term: 2, From: 100, Until: 600}, {Node: "n2", Term: 3, From: 550, Until: 950}}, 0, false)
		},
		func(*testing.T) Verdict {
			return CheckMasterLease([]LeaseLine{{Node: "n1", Term: 2, From: 100, Until: 500}, {Node: "n2", Term: 3, From: 550, Until: 950}}, 0, false)
		}},
	{FIFO, "a later waiter granted before an earlier one",
		func(*testing.T) Verdict {
			return CheckFIFO(withIDs(waitAcq("q", "a", history.OK, 12, 0, 120), waitAcq("q", "b", history.OK, 10, 5, 100),
				queueRead("q", 20, 30, "a", "b")))
		},
		func(*testing.T) Verdict {
			return CheckFIFO(withIDs(waitAcq("q", "a", history.OK, 10, 0, 100), waitAcq("q", "b", history.OK, 12, 5, 120),
				queueRead("q", 20, 30, "a", "b")))
		}},
	{Queue, "a waiter skipped: a later waiter granted while it still waited ahead (issue 24: fifo compares granted waiters only)",
		func(*testing.T) Verdict { return CheckQueue(skipped()) },
		func(*testing.T) Verdict {
			ops := skipped()
			for i := range ops {
				if ops[i].Kind == history.Release && ops[i].Session == "a" {
					ops[i].Call = 80 * qms // a released before b's grant
				}
			}
			sortByCall(ops)
			return CheckQueue(ops)
		}},
	{Queue, "a waiter dropped: refused before its wait could run out",
		func(*testing.T) Verdict {
			a := waitAcq("q", "a", history.Fail, 0, 2*qms, 500*qms)
			a.Code = "lock_held"
			return CheckQueue(withIDs(a, queueRead("q", 4*qms, 5*qms, "a")))
		},
		func(*testing.T) Verdict {
			a := waitAcq("q", "a", history.Fail, 0, 2*qms, 3010*qms)
			a.Code = "lock_held"
			return CheckQueue(withIDs(a, queueRead("q", 4*qms, 5*qms, "a")))
		}},
	{LockDelay, "a grant inside an expired holder's lock-delay",
		func(*testing.T) Verdict {
			const ms = int64(time.Millisecond)
			return CheckLockDelay(withIDs(acq("d", "a", 5, 0, 10*ms), expired("d", "a", 500*time.Millisecond, 1000*ms), acq("d", "b", 9, 1040*ms, 1100*ms)))
		},
		func(*testing.T) Verdict {
			const ms = int64(time.Millisecond)
			return CheckLockDelay(withIDs(acq("d", "a", 5, 0, 10*ms), expired("d", "a", 500*time.Millisecond, 1000*ms), acq("d", "b", 9, 1400*ms, 1510*ms)))
		}},
	{StaleReads, "a node's ?stale read went back",
		func(*testing.T) Verdict {
			return CheckStaleReads([]history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 5, "b", 5, 200, 210)},
				[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100)
		},
		func(*testing.T) Verdict {
			return CheckStaleReads([]history.StaleRead{sr("n1", 1, 5, "b", 5, 0, 10), sr("n1", 1, 7, "a", 7, 200, 210)},
				[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100)
		}},
	{StaleReads, "a ?stale read lagging past the bound",
		func(*testing.T) Verdict {
			return CheckStaleReads([]history.StaleRead{sr("n2", 1, 3, "z", 3, 150, 160)}, []history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100)
		},
		func(*testing.T) Verdict {
			return CheckStaleReads([]history.StaleRead{sr("n2", 1, 5, "a", 5, 150, 160)}, []history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100)
		}},
	{StaleReads, "a ?stale read during the run behind what its node said it had applied (issue 24: acknowledged writes recorded after the heal only)",
		func(*testing.T) Verdict {
			return CheckStale(StaleEvidence{Reads: []history.StaleRead{sr("n2", 2, 30, "a", 30, 4500e6, 4510e6)},
				Acks: []history.Ack{runAck(50, 1*sec)}, Samples: []Sample{poll("n2", 2, 2*sec, "n1", 60)},
				Faults: []FaultWindow{{Kind: "partition-node", From: 500e6, To: 6 * sec}}}, StaleLag)
		},
		func(*testing.T) Verdict {
			return CheckStale(StaleEvidence{Reads: []history.StaleRead{sr("n2", 2, 50, "a", 50, 4500e6, 4510e6)},
				Acks: []history.Ack{runAck(50, 1*sec)}, Samples: []Sample{poll("n2", 2, 2*sec, "n1", 60)},
				Faults: []FaultWindow{{Kind: "partition-node", From: 500e6, To: 6 * sec}}}, StaleLag)
		}},
	{StaleReads, "a ?stale read during the run lagging in a settled stretch, its node following a leader",
		func(*testing.T) Verdict {
			return CheckStale(StaleEvidence{Reads: []history.StaleRead{sr("n2", 2, 40, "a", 40, 6*sec, 6*sec+10)},
				Acks: []history.Ack{runAck(50, 2500e6)}, Samples: []Sample{poll("n2", 2, 4*sec, "n1", 40), poll("n2", 2, 5*sec, "n1", 40)}}, StaleLag)
		},
		func(*testing.T) Verdict {
			return CheckStale(StaleEvidence{Reads: []history.StaleRead{sr("n2", 2, 50, "a", 50, 6*sec, 6*sec+10)},
				Acks: []history.Ack{runAck(50, 2500e6)}, Samples: []Sample{poll("n2", 2, 4*sec, "n1", 40), poll("n2", 2, 5*sec, "n1", 40)}}, StaleLag)
		}},
	{QuietKeepalives, "a keepalive moved the commit index",
		func(*testing.T) Verdict {
			return CheckQuiet(QuietWindow{Samples: []QuietSample{{At: 0, Leader: "n1", Term: 2, Commit: 40}, {At: 10, Leader: "n1", Term: 2, Commit: 41}},
				Sessions: 4, Keepalives: 8})
		},
		func(*testing.T) Verdict {
			return CheckQuiet(QuietWindow{Samples: []QuietSample{{At: 0, Leader: "n1", Term: 2, Commit: 40}, {At: 10, Leader: "n1", Term: 2, Commit: 40}},
				Sessions: 4, Keepalives: 8})
		}},
	{RequestNumbers, "a repeat refused while the session holds the lock (issue 24: the old checker compared successful repeats only)",
		func(*testing.T) Verdict {
			return CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5},
				{Session: "s", Seq: 1, Step: traffic.RetryRepeat, Status: history.Fail, Code: "lock_held"}})
		},
		func(*testing.T) Verdict {
			return CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5},
				{Session: "s", Seq: 1, Step: traffic.RetryRepeat, Status: history.OK, Token: 5}})
		}},
	{RequestNumbers, "a late repeat granted anew after the release",
		func(*testing.T) Verdict {
			return CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5},
				{Session: "s", Seq: 2, Step: traffic.RetryFree, Status: history.OK},
				{Session: "s", Seq: 1, Step: traffic.RetryLate, Status: history.OK, Token: 9}})
		},
		func(*testing.T) Verdict {
			return CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5},
				{Session: "s", Seq: 2, Step: traffic.RetryFree, Status: history.OK},
				{Session: "s", Seq: 1, Step: traffic.RetryLate, Status: history.Fail, Code: "request_repeated"}})
		}},
}

// TestRegressions runs the checkers' regression suite: each breach caught
// by its checker, each control passed with something checked. The whole
// suite runs in milliseconds, in every go test of the package (CI).
func TestRegressions(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range regressions {
		seen[r.checker] = true
		t.Run(r.checker+"/"+r.breach, func(t *testing.T) {
			b := r.caught(t)
			if b.Checker != r.checker || b.Violations == 0 {
				t.Errorf("breach not caught: %s\n%s", b, strings.Join(b.Details, "\n"))
			}
			c := r.control(t)
			if c.Checker != r.checker || !c.OK() || c.Off != "" || c.Checked == 0 {
				t.Errorf("control: %s (checked %d)\n%s", c, c.Checked, strings.Join(c.Details, "\n"))
			}
		})
	}
	// Durability compares the live cluster before and after a restart
	// (its hand-made cases are in package runner); every other checker
	// has an entry.
	for _, c := range []string{Linearizability, Tokens, LeaseTiming, Fencing, Leaders, Events, MasterLease, FIFO, Queue,
		LockDelay, StaleReads, QuietKeepalives, RequestNumbers} {
		if !seen[c] {
			t.Errorf("no regression entry for %s", c)
		}
	}
}
