package lease

import "time"

// Liveness, as the leader judges it from the lease exchange (whether a
// member answered lately, how long it has been down or healthy, how long
// it has been a voter), is a matter of ages: the time from a member's last
// answer, or from when the leader first saw it, to now. Those ages are
// measured on this process's monotonic clock, as the difference of two
// readings of time.Now, both with their monotonic part (time.Time.Sub uses
// it when both have one):
//
//   - Not on a wall reading. A wall clock stepped by a day (an NTP step,
//     an operator's date command) would make a dead voter answer "a day
//     from now" and look healthy for a day, or make every live member's
//     last answer a day old at once. A time that round-trips through Unix
//     nanoseconds, or is stripped with Round(0), keeps only the wall
//     reading, and Sub then falls back to it; so the exchange keeps each
//     answer's time.Time as it is (exchange.go, promisePeer.last).
//   - Not on the node's Clock. The answers that make a member live come
//     from the lease rounds and probes, and those are timed in real time
//     (leaseLoop's timer, the rounds' deadlines from time.Now), so their
//     ages are measured in real time too. The node's Clock is the one the
//     fault harness moves: its offset jumps (clock-skew) and its rate
//     changes (clock-rate), and an age measured across such a jump would
//     be off by it, or mix two clocks with the exchange's readings.
//
// liveNow is that clock; every liveness decision reads it.
func (e *raftEngine) liveNow() time.Time {
	if f := e.liveClock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}
