package runner

import "testing"

func TestMaxClockDrift(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want float64
	}{
		{nil, 0},
		{[]string{"--heartbeat-timeout", "1s"}, 0},
		{[]string{"--max-clock-drift", "0.05"}, 0.05},
		{[]string{"-max-clock-drift=0.02"}, 0.02},
		{[]string{"--max-clock-drift", "0"}, -1},
	} {
		if got := maxClockDrift(tc.args); got != tc.want {
			t.Errorf("maxClockDrift(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
