package mux

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Rule
		wantErr bool
	}{
		{in: "none", want: None},
		{in: "drop", want: Drop},
		{in: " Blackhole ", want: Blackhole},
		{in: "DROP", want: Drop},
		{in: "", wantErr: true},
		{in: "Delay", want: Delay},
		{in: "slow", wantErr: true},
	} {
		got, err := ParseRule(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseRule(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseDirection(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Direction
		wantErr bool
	}{
		{in: "in", want: In},
		{in: "OUT", want: Out},
		{in: " both", want: Both},
		{in: "", wantErr: true},
		{in: "sideways", wantErr: true},
	} {
		got, err := ParseDirection(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseDirection(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestRuleAndDirection_TextRoundTrip(t *testing.T) {
	for _, r := range []Rule{None, Drop, Blackhole, Delay} {
		b, err := r.MarshalText()
		var back Rule
		if err != nil || back.UnmarshalText(b) != nil || back != r {
			t.Errorf("Rule %v: marshal %q, %v; round trip %v", r, b, err, back)
		}
	}
	for _, d := range []Direction{In, Out, Both} {
		b, err := d.MarshalText()
		var back Direction
		if err != nil || back.UnmarshalText(b) != nil || back != d {
			t.Errorf("Direction %v: marshal %q, %v; round trip %v", d, b, err, back)
		}
	}
	if _, err := Rule(9).MarshalText(); err == nil {
		t.Errorf("Rule(9).MarshalText succeeded")
	}
	if _, err := Direction(0).MarshalText(); err == nil {
		t.Errorf("Direction(0).MarshalText succeeded")
	}
}

func TestPeerRules_JSON(t *testing.T) {
	for _, tc := range []struct {
		rules PeerRules
		want  string
	}{
		{PeerRules{}, `{"in":"none","out":"none"}`},
		{PeerRules{In: Drop, Out: Blackhole}, `{"in":"drop","out":"blackhole"}`},
		{PeerRules{In: Delay, InDelay: 300 * time.Millisecond}, `{"in":"delay","out":"none","in_delay":"300ms"}`},
		{PeerRules{In: Blackhole, Out: Delay, OutDelay: 2 * time.Second}, `{"in":"blackhole","out":"delay","out_delay":"2s"}`},
	} {
		got, err := json.Marshal(tc.rules)
		if err != nil || string(got) != tc.want {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tc.rules, got, err, tc.want)
		}
		// The HTTP API documents the listing as api.FaultRules.
		var w api.FaultRules
		if err := json.Unmarshal(got, &w); err != nil {
			t.Fatalf("%s does not decode as api.FaultRules: %v", got, err)
		}
		if w.In != tc.rules.In.String() || w.Out != tc.rules.Out.String() ||
			w.InDelay.D() != tc.rules.InDelay || w.OutDelay.D() != tc.rules.OutDelay {
			t.Errorf("%s decodes as %+v, want the rules %+v", got, w, tc.rules)
		}
	}
}
