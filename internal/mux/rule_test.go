package mux

import "testing"

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
		{in: "delay", wantErr: true},
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
	for _, r := range []Rule{None, Drop, Blackhole} {
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

func TestPeerRules_PackRoundTrip(t *testing.T) {
	for _, in := range []Rule{None, Drop, Blackhole} {
		for _, out := range []Rule{None, Drop, Blackhole} {
			p := PeerRules{In: in, Out: out}
			if got := unpack(p.pack()); got != p {
				t.Errorf("unpack(pack(%+v)) = %+v", p, got)
			}
			if (p.pack() == 0) != (p == PeerRules{}) {
				t.Errorf("pack(%+v) = %d: zero must mean no rule", p, p.pack())
			}
		}
	}
}
