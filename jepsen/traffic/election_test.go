package traffic

import "testing"

func TestValueSeq(t *testing.T) {
	for v, want := range map[string]int{"worker-3/7": 7, "worker-3/12": 12, "durability": -1, "": -1, "worker-3/x": -1} {
		if got := valueSeq(v); got != want {
			t.Errorf("valueSeq(%q) = %d, want %d", v, got, want)
		}
	}
}
