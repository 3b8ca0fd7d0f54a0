package api

import "time"

// Bounds of FaultRequest.Delay for rule "delay".
const (
	MinFaultDelay = time.Millisecond
	MaxFaultDelay = 60 * time.Second
)

// FaultRequest is the body of POST /v1/debug/faults, which exists only on
// nodes started with the explicit unsafe fault-injection flag (which only
// a build with the lockd_unsafe tag has). Direction is
// "in" (what the node receives from Peer), "out" (what it sends to Peer) or
// "both"; Rule is "drop" (reset connections, refuse new ones), "blackhole"
// (accept and never answer), "delay" (hold every byte for Delay, in order,
// losing nothing) or "none" (lift the rule in that direction).
type FaultRequest struct {
	Peer      string `json:"peer"`
	Direction string `json:"direction"`
	Rule      string `json:"rule"`
	// Delay is required with rule "delay", between MinFaultDelay and
	// MaxFaultDelay, and must be absent or zero with any other rule.
	Delay Duration `json:"delay,omitempty"`
}

// FaultList answers the fault routes: the rules in force after the request,
// and how many peer connections the rules refused since the node started.
// Both are whatever the node's fault injector reports; lockd's are maps by
// peer of FaultRules and of {"dials","accepts"} counts.
type FaultList struct {
	Faults  any `json:"faults"`
	Refused any `json:"refused"`
}

// FaultRules are the rules in force for one peer, as lockd lists them in
// FaultList.Faults: In and Out are "none", "drop", "blackhole" or "delay",
// and InDelay and OutDelay are set only for a delay in that direction.
type FaultRules struct {
	In       string   `json:"in"`
	Out      string   `json:"out"`
	InDelay  Duration `json:"in_delay,omitempty"`
	OutDelay Duration `json:"out_delay,omitempty"`
}

// ClockSkew is the body and answer of /v1/debug/clock, which exists only on
// nodes started with the explicit unsafe fault-injection flag (lockd_unsafe
// builds): the node's
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
