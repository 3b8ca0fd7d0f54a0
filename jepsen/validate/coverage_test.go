package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestNoEvidenceIsUndecided feeds every checker a run with nothing for it
// to check: each must say it could not decide, never pass. Given something
// to check, each says what it checked.
func TestNoEvidenceIsUndecided(t *testing.T) {
	dir := t.TempDir()
	const ms = int64(time.Millisecond)
	granted := []history.Op{acq("l", "a", 5, 0, 10), {ID: 2, Lock: "l", Kind: history.Release, Session: "a", Status: history.OK, Call: 20, Return: 30}}
	for i := range granted {
		granted[i].ID = int64(i + 1)
	}
	queued := []history.Op{waitAcq("q", "a", history.OK, 10, 0, 100), waitAcq("q", "b", history.OK, 12, 5, 120),
		queueRead("q", 20, 30, "a", "b")}
	expiry := []history.Op{acq("d", "a", 5, 0, 10*ms), expired("d", "a", 500*time.Millisecond, 1000*ms)}
	tests := []struct {
		checker string
		none    Verdict // with nothing to check
		some    Verdict // with something
	}{
		{Linearizability, CheckLinearizable(nil, nil, time.Second, dir), CheckLinearizable(granted, nil, time.Second, dir)},
		{Tokens, CheckTokens(nil, nil), CheckTokens(granted, nil)},
		{LeaseTiming, CheckLeaseTiming(granted, nil),
			CheckLeaseTiming(granted, []history.Hold{{Lock: "l", Session: "a", Token: 5, From: 10, To: 20}})},
		{Fencing, CheckFencing(nil, nil), CheckFencing([]traffic.Write{{Client: "c", Token: 5, Accepted: true}},
			[]traffic.Grant{{Client: "c", Session: "c", Token: 5, Call: 1, Return: 2}})},
		{Leaders, CheckLeaders(nil, false), CheckLeaders([]Sample{{Node: "n1", State: "Leader", Term: 2}}, false)},
		{Leaders + " (classic)", CheckLeaders(nil, true), CheckLeaders([]Sample{{Node: "n1", State: "coordinator"}}, true)},
		{MasterLease, CheckMasterLease(nil, 0, false), CheckMasterLease([]LeaseLine{{Node: "n1", Term: 2, From: 1, Until: 5}}, 0, false)},
		{Events, CheckEvents(nil), CheckEvents([]history.Event{{What: "cluster up"}})},
		{FIFO, CheckFIFO(granted), CheckFIFO(queued)},
		{Queue, CheckQueue(granted), CheckQueue(queued)},
		{LockDelay, CheckLockDelay(granted), CheckLockDelay(expiry)},
		{StaleReads, CheckStaleReads(nil, nil, 100),
			CheckStaleReads([]history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160)}, []history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100)},
		{StaleReads + " (no acknowledged write)", CheckStaleReads([]history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160)}, nil, 100), Verdict{}},
		{StaleReads + " (no read late enough)", CheckStaleReads([]history.StaleRead{sr("n1", 1, 5, "a", 5, 50, 60)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 100), Verdict{}},
		{QuietKeepalives, CheckQuiet(QuietWindow{}), CheckQuiet(QuietWindow{Samples: []QuietSample{{Leader: "n1", Term: 2}, {At: 1, Leader: "n1", Term: 2}},
			Sessions: 1, Keepalives: 2})},
		{RequestNumbers, CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5}}),
			CheckRequestNumbers([]traffic.Retry{{Session: "s", Seq: 1, Step: traffic.RetryFirst, Status: history.OK, Token: 5},
				{Session: "s", Seq: 1, Step: traffic.RetryRepeat, Status: history.OK, Token: 5}})},
		{KV, CheckKV(nil, time.Second, dir), CheckKV([]history.KVOp{kvPut(0, "a", 5, 0, 10)}, time.Second, dir)},
		{Watches, CheckWatches(nil, nil), CheckWatches([]traffic.WatchLog{{After: 4, Events: []traffic.WatchedEvent{{Index: 5, Type: "put", Key: "k", Value: "a"}}}},
			[]traffic.KVWrite{{Key: "k", Value: "a", Index: 5, Status: history.OK}})},
		{Ephemeral, CheckEphemeral(nil, nil), CheckEphemeral([]traffic.EphemeralSession{{Session: "s", Keys: []string{"k"}, Ended: 10}},
			[]traffic.EphemeralRead{{Call: 20, Return: 30}})},
		{FencedWrites, CheckFencedWrites(nil, nil), CheckFencedWrites(nil, []traffic.FencedKVWrite{{Token: 5, Released: 10, Call: 20, Status: history.Fail}})},
	}
	for _, tt := range tests {
		t.Run(tt.checker, func(t *testing.T) {
			if tt.none.Undecided == "" || tt.none.OK() || tt.none.Violations != 0 {
				t.Errorf("with nothing to check: %s (%v)", tt.none, tt.none.Details)
			}
			if tt.some.Checker == "" {
				return
			}
			if !tt.some.OK() || tt.some.Checked == 0 || tt.some.Unit == "" || !strings.Contains(tt.some.String(), "ok: checked "+tt.some.Coverage) {
				t.Errorf("with something to check: %s (checked %d %s)", tt.some, tt.some.Checked, tt.some.Unit)
			}
		})
	}
}

// TestNotInForce checks that a checker marked not in force passes the run
// (it was not asked), says why, and keeps a violation it found.
func TestNotInForce(t *testing.T) {
	v := CheckFencing(nil, nil).NotInForce("the fenced workload was not run")
	if !v.OK() || v.Undecided != "" || !strings.Contains(v.String(), "off (the fenced workload was not run)") {
		t.Errorf("off: %s", v)
	}
	w := Verdict{Checker: Fencing, Violations: 1}.NotInForce("x")
	if w.OK() || !strings.Contains(w.String(), "FAIL") {
		t.Errorf("a violation hidden by Off: %s", w)
	}
	if v := CheckMasterLease(nil, 0, true); !v.OK() || v.Off == "" {
		t.Errorf("classic mode: master-lease %s", v)
	}
}
