package validate

import (
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

func sr(node string, proc int, index uint64, holder string, token uint64, call, ret int64) history.StaleRead {
	return history.StaleRead{Node: node, Proc: proc, Lock: "l", Index: index, Holder: holder, Token: token, Call: call, Return: ret}
}

func TestCheckStaleReads(t *testing.T) {
	const lag = 100
	tests := []struct {
		name  string
		reads []history.StaleRead
		acks  []history.Ack
		want  int
	}{
		{"forward", []history.StaleRead{sr("n1", 1, 5, "a", 5, 0, 10), sr("n1", 1, 7, "", 0, 20, 30)}, nil, 0},
		{"same state again", []history.StaleRead{sr("n1", 1, 5, "a", 5, 0, 10), sr("n1", 1, 5, "a", 5, 20, 30)}, nil, 0},
		{"back on one node", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 5, "b", 5, 20, 30)}, nil, 1},
		{"back to free at an older index", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 6, "", 0, 20, 30)}, nil, 1},
		{"same index, other holder", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 7, "b", 7, 20, 30)}, nil, 1},
		{"nodes lag differently", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n2", 1, 5, "b", 5, 20, 30)}, nil, 0},
		{"a restarted process starts behind", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 2, 5, "b", 5, 20, 30)}, nil, 0},
		{"concurrent reads may go either way", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 30), sr("n1", 1, 5, "b", 5, 10, 40)}, nil, 0},
		{"back after a concurrent read", []history.StaleRead{sr("n1", 1, 7, "a", 7, 0, 10), sr("n1", 1, 9, "c", 9, 5, 40),
			sr("n1", 1, 5, "b", 5, 20, 50)}, nil, 1},
		{"caught up within the bound", []history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160), sr("n2", 1, 9, "b", 9, 150, 160)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 0},
		{"behind within the bound is allowed", []history.StaleRead{sr("n1", 1, 3, "a", 3, 120, 130)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 0},
		{"behind past the bound", []history.StaleRead{sr("n1", 1, 5, "a", 5, 150, 160), sr("n2", 1, 3, "z", 3, 150, 160)},
			[]history.Ack{{Lock: "l", Index: 5, Return: 40}}, 1},
		{"another lock's write", []history.StaleRead{sr("n1", 1, 3, "a", 3, 150, 160)},
			[]history.Ack{{Lock: "m", Index: 5, Return: 40}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckStaleReads(tt.reads, tt.acks, time.Duration(lag))
			if v.Violations != tt.want {
				t.Errorf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
			if v.Checker != StaleReads {
				t.Errorf("checker = %q", v.Checker)
			}
		})
	}
}
