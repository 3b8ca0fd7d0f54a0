package validate

import "testing"

func TestCheckQuiet(t *testing.T) {
	qs := func(at int64, leader string, term, commit uint64) QuietSample {
		return QuietSample{At: at, Leader: leader, Term: term, Commit: commit}
	}
	tests := []struct {
		name      string
		w         QuietWindow
		want      int
		undecided bool
	}{
		{"still", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40), qs(10, "n1", 2, 40), qs(20, "n1", 2, 40)},
			Sessions: 4, Keepalives: 30}, 0, false},
		{"a keepalive wrote", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40), qs(10, "n1", 2, 41), qs(20, "n1", 2, 41)},
			Sessions: 4, Keepalives: 30}, 1, false},
		{"every keepalive wrote", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40), qs(10, "n1", 2, 44), qs(20, "n1", 2, 48)},
			Sessions: 4, Keepalives: 30}, 2, false},
		{"new leader", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40), qs(10, "n2", 3, 41)},
			Sessions: 4, Keepalives: 30}, 0, true},
		{"no keepalive", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40), qs(10, "n1", 2, 40)}, Sessions: 4}, 0, true},
		{"one sample", QuietWindow{Samples: []QuietSample{qs(0, "n1", 2, 40)}, Sessions: 4, Keepalives: 3}, 0, true},
		{"skipped", QuietWindow{Skipped: "never quiet"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckQuiet(tt.w)
			if v.Violations != tt.want || (v.Undecided != "") != tt.undecided {
				t.Errorf("violations = %d, undecided %q; want %d, undecided %v (%v)", v.Violations, v.Undecided, tt.want, tt.undecided, v.Details)
			}
		})
	}
}
