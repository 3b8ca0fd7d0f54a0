package validate

import (
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

func TestCheckElections(t *testing.T) {
	const e = "e"
	camp := func(session, value string, token uint64, call, ret int64) history.Op {
		return history.Op{Lock: e, Kind: history.Acquire, Session: session, Value: value, Token: token, Status: history.OK, Call: call, Return: ret}
	}
	proclaim := func(session, value string, st history.Status, call, ret int64) history.Op {
		return history.Op{Lock: e, Kind: history.Proclaim, Session: session, Value: value, Status: st, Call: call, Return: ret}
	}
	leader := func(session, value string, token uint64, call, ret int64) history.Op {
		return history.Op{Client: 9, Lock: e, Kind: history.Read, Holder: session, Value: value, Token: token, Status: history.OK, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"values as proclaimed", []history.Op{camp("a", "a1", 5, 0, 10), leader("a", "a1", 5, 20, 30),
			proclaim("a", "a2", history.OK, 40, 50), leader("a", "a2", 5, 60, 70)}, 0},
		{"a read misses a proclaim", []history.Op{camp("a", "a1", 5, 0, 10), proclaim("a", "a2", history.OK, 40, 50),
			leader("a", "a1", 5, 60, 70)}, 1},
		{"a read sees a value nobody asked for", []history.Op{camp("a", "a1", 5, 0, 10), leader("a", "x", 5, 20, 30)}, 1},
		{"another election is not checked here", []history.Op{camp("a", "a1", 5, 0, 10),
			{Lock: "other", Kind: history.Read, Holder: "a", Value: "x", Token: 5, Status: history.OK, Call: 20, Return: 30}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckElections(tt.ops, map[string]bool{e: true}, 10*time.Second, t.TempDir())
			if v.Violations != tt.want || v.Undecided != "" {
				t.Errorf("violations = %d (undecided %q), want %d: %v", v.Violations, v.Undecided, tt.want, v.Details)
			}
		})
	}
}

func TestMergeVerdicts(t *testing.T) {
	a := Verdict{Checker: Linearizability, Violations: 1, Details: []string{"a"}, Artifact: "x.html"}
	b := Verdict{Checker: Linearizability, Undecided: "timeout", Details: []string{"b"}}
	v := MergeVerdicts(a, b)
	if v.Checker != Linearizability || v.Violations != 1 || v.Undecided != "timeout" || v.Artifact != "x.html" || len(v.Details) != 2 {
		t.Errorf("merged %+v", v)
	}
	if v := MergeVerdicts(Verdict{Checker: Linearizability}, Verdict{Checker: Linearizability}); !v.OK() {
		t.Errorf("two clean parts merged into %+v", v)
	}
}
