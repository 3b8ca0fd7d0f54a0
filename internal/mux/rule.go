package mux

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Rule is what happens to traffic with a peer in one direction. Each
// direction with a peer has one rule at a time; setting a rule replaces the
// one before.
type Rule int

const (
	// None lets traffic through: the healthy network.
	None Rule = iota
	// Drop resets: setting it closes every open connection with the peer;
	// afterwards, dials (for Out) fail at once and accepted connections (for
	// In) are closed right after their header, as if refused; on
	// connections still allowed in the other direction, a Write (Out) or a
	// Read (In) fails with ErrDropped.
	Drop
	// Blackhole loses bytes silently: nothing is closed; a Write (Out)
	// reports success and sends nothing, bytes that arrive (In) are
	// discarded and a Read blocks until something arrives after the rule is
	// healed, the read deadline passes or the connection is closed; dials
	// (Out) hang until their timeout, as an unanswered SYN would.
	// Connections the peer dials are still accepted, since their header
	// names the peer, but nothing read on them arrives.
	Blackhole
	// Delay holds every byte for a duration (PeerRules.InDelay or OutDelay)
	// before delivering it, in order, losing nothing: bytes written (Out)
	// leave that long after the Write, bytes that arrive (In) reach a Read
	// that long after they arrived. Dials and accepts are not delayed. Set
	// it with Faults.SetDelay.
	Delay
)

var ruleNames = [...]string{None: "none", Drop: "drop", Blackhole: "blackhole", Delay: "delay"}

// String returns the rule's name as ParseRule accepts it.
func (r Rule) String() string {
	if r < 0 || int(r) >= len(ruleNames) {
		return fmt.Sprintf("Rule(%d)", int(r))
	}
	return ruleNames[r]
}

// valid reports whether r is one of the declared rules.
func (r Rule) valid() bool { return r >= 0 && int(r) < len(ruleNames) }

// ParseRule parses "none", "drop", "blackhole" or "delay", ignoring case and
// surrounding space.
func ParseRule(s string) (Rule, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for r, name := range ruleNames {
		if s == name {
			return Rule(r), nil
		}
	}
	return None, fmt.Errorf("mux: unknown fault rule %q (want none, drop, blackhole or delay)", s)
}

// MarshalText encodes r as its name, so JSON shows "drop", not 1.
func (r Rule) MarshalText() ([]byte, error) {
	if !r.valid() {
		return nil, fmt.Errorf("mux: invalid rule %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes a name with ParseRule.
func (r *Rule) UnmarshalText(b []byte) error {
	v, err := ParseRule(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Direction says which way of the traffic with a peer a rule applies to,
// seen from the node that holds the rule.
type Direction int

const (
	// In is traffic from the peer to this node, and the connections the
	// peer dials to it.
	In Direction = 1 << iota
	// Out is traffic from this node to the peer, and the connections this
	// node dials to it.
	Out
	// Both is In and Out: a full partition from the peer.
	Both = In | Out
)

// String returns the direction's name as ParseDirection accepts it.
func (d Direction) String() string {
	switch d {
	case In:
		return "in"
	case Out:
		return "out"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// valid reports whether d is In, Out or Both.
func (d Direction) valid() bool { return d == In || d == Out || d == Both }

// ParseDirection parses "in", "out" or "both", ignoring case and
// surrounding space.
func ParseDirection(s string) (Direction, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "in":
		return In, nil
	case "out":
		return Out, nil
	case "both":
		return Both, nil
	}
	return 0, fmt.Errorf("mux: unknown direction %q (want in, out or both)", s)
}

// MarshalText encodes d as its name.
func (d Direction) MarshalText() ([]byte, error) {
	if !d.valid() {
		return nil, fmt.Errorf("mux: invalid direction %d", int(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText decodes a name with ParseDirection.
func (d *Direction) UnmarshalText(b []byte) error {
	v, err := ParseDirection(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// PeerRules are the rules in force for one peer.
type PeerRules struct {
	// In applies to traffic from the peer.
	In Rule
	// Out applies to traffic to the peer.
	Out Rule
	// InDelay is how long bytes from the peer are held when In is Delay;
	// zero otherwise.
	InDelay time.Duration
	// OutDelay is how long bytes to the peer are held when Out is Delay;
	// zero otherwise.
	OutDelay time.Duration
}

// peerRulesJSON is how PeerRules look in JSON, as GET /v1/debug/faults
// lists them: delays as duration strings, only when set.
type peerRulesJSON struct {
	In       Rule   `json:"in"`
	Out      Rule   `json:"out"`
	InDelay  string `json:"in_delay,omitempty"`
	OutDelay string `json:"out_delay,omitempty"`
}

// MarshalJSON encodes p as {"in":"delay","out":"none","in_delay":"300ms"}.
func (p PeerRules) MarshalJSON() ([]byte, error) {
	j := peerRulesJSON{In: p.In, Out: p.Out}
	if p.In == Delay {
		j.InDelay = p.InDelay.String()
	}
	if p.Out == Delay {
		j.OutDelay = p.OutDelay.String()
	}
	return json.Marshal(j)
}

// in returns the rule and delay for traffic from the peer; nil means none.
func (p *PeerRules) in() (Rule, time.Duration) {
	if p == nil {
		return None, 0
	}
	return p.In, p.InDelay
}

// out returns the rule and delay for traffic to the peer; nil means none.
func (p *PeerRules) out() (Rule, time.Duration) {
	if p == nil {
		return None, 0
	}
	return p.Out, p.OutDelay
}
