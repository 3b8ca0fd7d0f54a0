package failpoint

import (
	"testing"
	"time"
)

// TestLateRange checks the late-answer delay against the timeouts it is
// derived from: below the leader-lease timeout less a fifth of the
// heartbeat timeout and the margin (else Raft deposes the leader before it
// is cut off, as in every campaign cycle at lockd's defaults with the old
// 300-400 ms), below four fifths of the heartbeat timeout, and 300-400 ms
// where there is room, as the self-test had it.
func TestLateRange(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		ht, llt, lo, hi time.Duration
	}{
		{500 * ms, 250 * ms, 97500 * time.Microsecond, 130 * ms}, // lockd's defaults
		{600 * ms, 600 * ms, 300 * ms, 400 * ms},                 // the self-test
		{time.Second, time.Second, 300 * ms, 400 * ms},
		{time.Second, 400 * ms, 135 * ms, 180 * ms},
		{500 * ms, 0, 285 * ms, 380 * ms}, // unknown: as high as lockd allows
	} {
		lo, hi := lateRange(&Env{HeartbeatTimeout: tt.ht, LeaderLeaseTimeout: tt.llt})
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("heartbeat %v, leader lease %v: %v-%v, want %v-%v", tt.ht, tt.llt, lo, hi, tt.lo, tt.hi)
		}
		llt := tt.llt
		if llt == 0 {
			llt = tt.ht
		}
		if hi+tt.ht/5 >= llt || hi > tt.ht*4/5 || lo > hi {
			t.Errorf("heartbeat %v, leader lease %v: %v-%v leaves Raft's step-down no room", tt.ht, tt.llt, lo, hi)
		}
	}
}

// TestScheduleCountsAims checks the per-fault tally of aimed cycles.
func TestScheduleCountsAims(t *testing.T) {
	var s Schedule
	s.count("late-answer", true)
	s.count("late-answer", false)
	s.count("lease-schedule", false)
	got := s.Aims()
	if got["late-answer"] != (Aim{Cycles: 2, Reached: 1}) || got["lease-schedule"] != (Aim{Cycles: 1}) {
		t.Errorf("aims = %v", got)
	}
	if g := got["late-answer"].String(); g != "reached 1 of 2 cycles" {
		t.Errorf("String = %q", g)
	}
	var _ Aimed = &lateAnswer{}
	var _ Aimed = &leaseSchedule{}
}
