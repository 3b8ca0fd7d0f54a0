package wire

import "time"

// FaultRequest is the body of POST /v1/debug/faults, which exists only on
// nodes started with the explicit unsafe fault-injection flag. Direction is
// "in", "out" or "both"; Rule is "drop" (refuse new connections) or
// "blackhole" (accept and never answer).
type FaultRequest struct {
	Peer      string `json:"peer"`
	Direction string `json:"direction"`
	Rule      string `json:"rule"`
}

// FaultList answers the fault routes: the rules in force after the request,
// and how many peer connections the rules refused since the node started.
// Both are whatever the node's fault injector reports; lockd's are maps by
// peer of {"in","out"} rules and of {"dials","accepts"} counts.
type FaultList struct {
	Faults  any `json:"faults"`
	Refused any `json:"refused"`
}

// ClockSkew is the body and answer of /v1/debug/clock, which exists only on
// nodes started with the explicit unsafe fault-injection flag: the node's
// clock reads real time + Offset and advances at Rate (1 = real time), and
// the wall time it stamps and shows is WallStep apart from that, while its
// timers do not see WallStep (an NTP step of the system clock). The answer
// has all three fields. In a request, a body with only wall_step leaves
// offset and rate as they are; otherwise an absent offset means 0 and an
// absent or zero rate means 1. An absent wall_step leaves it unchanged.
type ClockSkew struct {
	Offset   *Duration `json:"offset,omitempty"`
	Rate     *float64  `json:"rate,omitempty"`
	WallStep *Duration `json:"wall_step,omitempty"`
}

// MaxWallStep bounds ClockSkew.WallStep either way.
const MaxWallStep = 1000 * time.Hour
