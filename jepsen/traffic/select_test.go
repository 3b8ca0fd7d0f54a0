package traffic

import (
	"slices"
	"testing"
)

func TestSelect(t *testing.T) {
	for _, tt := range []struct {
		list string
		want []string // nil: an error
	}{
		{"all", All},
		{"locks,fenced", []string{Locks, Fenced}},
		{"plain-locks", []string{PlainLocks}},
		{" expiry , locks,expiry", []string{Expiry, Locks}},
		{"", nil},
		{"none", nil},
		{"locks,bogus", nil},
		{"all,locks", nil},
	} {
		got, err := Select(tt.list)
		if tt.want == nil {
			if err == nil {
				t.Errorf("Select(%q) = %v, want an error", tt.list, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Select(%q) = %v, %v; want %v", tt.list, got, err, tt.want)
		}
	}
}
