package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hashicorp/raft"
)

// wallStepped returns t with its wall reading moved by step and its
// monotonic reading kept: what time.Now returns, at the instant it
// returned t, on a host whose system clock (CLOCK_REALTIME) was stepped by
// step, as an NTP step or an operator's date command steps it. Stepping
// the real system clock would step it for every process on the host, so
// the tests here step the readings instead.
//
// The time package has no call for this (Add moves both readings, Round(0)
// drops the monotonic one), so wallStepped edits the wall field of the
// value: with a monotonic reading, bits 30..62 of it hold the seconds
// since 1885. It panics unless t has a monotonic reading, step is whole
// seconds, and the result is what it must be (the wall reading moved by
// step, Sub against t zero), so that a change of time.Time's layout fails
// loudly rather than stepping nothing. A step of 0 returns t.
func wallStepped(t time.Time, step time.Duration) time.Time {
	if step == 0 {
		return t
	}
	if !hasMonotonic(t) {
		panic(fmt.Sprintf("wallStepped: %v has no monotonic reading", t))
	}
	if step%time.Second != 0 {
		panic(fmt.Sprintf("wallStepped: step %v is not whole seconds", step))
	}
	type timeLayout struct { // time.Time's fields, in order
		wall uint64
		ext  int64
		loc  *time.Location
	}
	const monoBit, nsecShift, secBits = 1 << 63, 30, 33
	s := t
	w := (*timeLayout)(unsafe.Pointer(&s)) //nolint:gosec // G103: a test's model of a system-clock step; checked below against the time package's own arithmetic
	sec := int64(w.wall<<1>>(nsecShift+1)) + int64(step/time.Second)
	if w.wall&monoBit == 0 || sec < 0 || sec >= 1<<secBits {
		panic(fmt.Sprintf("wallStepped: cannot step %v by %v", t, step))
	}
	w.wall = w.wall&(monoBit|(1<<nsecShift-1)) | uint64(sec)<<nsecShift
	if !s.Round(0).Equal(t.Round(0).Add(step)) || s.Sub(t) != 0 || t.Sub(s) != 0 || !hasMonotonic(s) {
		panic(fmt.Sprintf("wallStepped: time.Time's layout is not the one expected: %v stepped %v gave %v", t, step, s))
	}
	return s
}

// TestWallStepped_ModelsASystemClockStep: a stepped reading shows the
// step on its wall part only. Measured against a reading taken before the
// step, the time since it is what the monotonic clock says (about
// nothing); only a time without a monotonic reading sees the day.
func TestWallStepped_ModelsASystemClockStep(t *testing.T) {
	for _, step := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
		before := time.Now()
		after := wallStepped(time.Now(), step)
		if d := after.Sub(before); d < 0 || d > time.Hour {
			t.Errorf("step %v: monotonic age %v, want the time between two readings", step, d)
		}
		if d := after.Sub(before.Round(0)); d < step-time.Hour || d > step+time.Hour {
			t.Errorf("step %v: age of a wall-only reading %v, want about the step", step, d)
		}
		if got := after.Round(0).Sub(time.Now().Round(0)); got < step-time.Hour || got > step+time.Hour {
			t.Errorf("step %v: the stepped wall reading is %v from the system clock's", step, got)
		}
	}
}

// livenessEngine is a raftEngine with only what liveness needs: the lease
// exchange, a heartbeat timeout, and a clock whose wall reading a test
// steps.
type livenessEngine struct {
	*raftEngine
	step time.Duration // the wall step, set between answers and checks
}

func newLivenessEngine(t *testing.T, hb time.Duration) *livenessEngine {
	cfg := validConfig()
	cfg.ID, cfg.HeartbeatTimeout = "leader", hb
	x := newExchange(mustTCPLayer(t), nil)
	t.Cleanup(x.close)
	le := &livenessEngine{raftEngine: &raftEngine{n: &Node{cfg: cfg}, x: x}}
	now := func() time.Time { return wallStepped(time.Now(), le.step) }
	le.liveClock.Store(&now)
	return le
}

// answer has the peer at addr answer one round of the leader's exchange
// with a promise.
func (le *livenessEngine) answer(t *testing.T, addr string) {
	t.Helper()
	if _, err := le.x.round([]string{addr}, "leader", 1, 1, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func (le *livenessEngine) view(seen map[string]*apHealth, start time.Time, addrs ...string) map[string]apMember {
	var servers []raft.Server
	for _, a := range addrs {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(a), Address: raft.ServerAddress(a)})
	}
	out := map[string]apMember{}
	for _, m := range le.apView(servers, seen, start, le.liveNow()) {
		out[m.Addr] = m
	}
	return out
}

// TestLiveness_WallStepBetweenAnswerAndCheck steps the wall reading of the
// clock the leader's liveness decisions read (a day either way) between a
// peer's answer to the lease exchange and the decision, as an NTP step of
// the leader's system clock would:
//
//   - back a day: a peer that answered once and then fell silent for
//     longer than a heartbeat timeout is not healthy to the voter-set
//     maintenance (apView), has been down for less than an hour rather
//     than not at all, and fails the transfer check (answeredLately);
//   - forward a day: a peer that has just answered is healthy, not down,
//     and passes the transfer check.
//
// It catches an answer time kept without its monotonic reading (Unix
// nanoseconds, time.Unix, Round(0)) and an age measured on wall readings
// (now.Round(0).Sub(at), or a wall-only now): either makes the dead peer's
// answer a day in the future, or the live peer's a day old. The heartbeat
// timeouts are chosen so that nothing depends on how fast the machine is:
// the silent peer's wait is a sleep of twice a 10ms timeout, and the live
// peer has an hour.
func TestLiveness_WallStepBetweenAnswerAndCheck(t *testing.T) {
	t.Run("back", func(t *testing.T) {
		le := newLivenessEngine(t, 10*time.Millisecond)
		addr := follower(t, func(uint64, string) time.Duration { return time.Second })
		le.answer(t, addr)
		seen, start := map[string]*apHealth{}, le.liveNow()
		le.view(seen, start, addr) // the maintenance's first look, with the answer fresh
		time.Sleep(2 * le.n.cfg.HeartbeatTimeout)
		le.step = -24 * time.Hour
		if at := le.x.lastPromise(addr); le.liveNow().Sub(at) < le.n.cfg.HeartbeatTimeout {
			t.Errorf("the silent peer's answer is %v old on the stepped clock, want at least the heartbeat timeout", le.liveNow().Sub(at))
		}
		if le.answeredLately([]string{addr}) {
			t.Error("after a -24h wall step, a peer silent for two heartbeat timeouts passes the transfer check")
		}
		m := le.view(seen, start, addr)[addr]
		if m.Healthy || m.DownFor <= 0 || m.DownFor > time.Hour {
			t.Errorf("after a -24h wall step the silent peer is healthy %v, down for %v; want unhealthy, down for the time since its answer", m.Healthy, m.DownFor)
		}
	})
	t.Run("forward", func(t *testing.T) {
		le := newLivenessEngine(t, time.Hour)
		addr := follower(t, func(uint64, string) time.Duration { return time.Second })
		seen, start := map[string]*apHealth{}, le.liveNow()
		le.answer(t, addr)
		le.view(seen, start, addr)
		le.step = 24 * time.Hour
		le.answer(t, addr)
		if !le.answeredLately([]string{addr}) {
			t.Errorf("after a +24h wall step, a peer that has just answered fails the transfer check (its answer is %v old)", le.liveNow().Sub(le.x.lastPromise(addr)))
		}
		m := le.view(seen, start, addr)[addr]
		if !m.Healthy || m.DownFor != 0 || m.HealthyFor > time.Hour {
			t.Errorf("after a +24h wall step the live peer is healthy %v, down for %v, healthy for %v; want healthy since its first answer", m.Healthy, m.DownFor, m.HealthyFor)
		}
	})
}

// TestExchange_AnswerTimeKeepsItsMonotonicReading: the time the exchange
// keeps of a peer's answer, by both lastPromise and peerApplied, carries
// time.Now's monotonic reading, and its age against a reading taken after
// a step of the system clock, either way, is the time since the answer.
// Unix nanoseconds (the exchange's former record) would give an age of a
// day, or of minus a day.
func TestExchange_AnswerTimeKeepsItsMonotonicReading(t *testing.T) {
	addr := follower(t, func(uint64, string) time.Duration { return time.Second })
	x := newExchange(mustTCPLayer(t), nil)
	defer x.close()
	before := time.Now()
	if _, err := x.round([]string{addr}, "L", 1, 1, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, applied := x.peerApplied(addr)
	for name, at := range map[string]time.Time{"lastPromise": x.lastPromise(addr), "peerApplied": applied} {
		if at.IsZero() || !hasMonotonic(at) {
			t.Fatalf("%s = %v: no monotonic reading", name, at)
		}
		for _, step := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
			now := wallStepped(time.Now(), step)
			if age, since := now.Sub(at), now.Sub(before); age < 0 || age > since {
				t.Errorf("%s after a %v step of the wall clock: the answer is %v old, want between 0 and %v", name, step, age, since)
			}
		}
	}
}

// hasMonotonic reports whether t carries a monotonic clock reading: the
// time package documents that String then ends in an "m=±<value>" field.
func hasMonotonic(t time.Time) bool { return strings.Contains(t.String(), " m=") }
