package validate

import (
	"testing"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

func TestCheckRequestNumbers(t *testing.T) {
	ok, fail, unknown := history.OK, history.Fail, history.Unknown
	r := func(seq uint64, step string, st history.Status, token uint64) traffic.Retry {
		return traffic.Retry{Session: "s1", Seq: seq, Step: step, Status: st, Token: token}
	}
	tests := []struct {
		name    string
		retries []traffic.Retry
		want    int
	}{
		{"a cycle as promised", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5), r(1, traffic.RetryRepeat, ok, 5),
			r(2, traffic.RetryFree, ok, 0), r(1, traffic.RetryLate, fail, 0)}, 0},
		{"a repeat answered with another token", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			r(1, traffic.RetryRepeat, ok, 6)}, 1},
		{"a late repeat granted anew", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			r(2, traffic.RetryFree, ok, 0), r(1, traffic.RetryLate, ok, 9)}, 1},
		{"a late repeat of unknown outcome proves nothing", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			r(2, traffic.RetryFree, ok, 0), r(1, traffic.RetryLate, unknown, 0)}, 0},
		{"a repeat of a first request of unknown outcome proves nothing", []traffic.Retry{r(1, traffic.RetryFirst, unknown, 0),
			r(1, traffic.RetryRepeat, ok, 6), r(1, traffic.RetryLate, ok, 6)}, 0},
		{"a repeat refused (the session lost) is no breach", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			r(1, traffic.RetryRepeat, fail, 0)}, 0},
		{"cycles of two sessions kept apart", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			{Session: "s2", Seq: 1, Step: traffic.RetryRepeat, Status: ok, Token: 7}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := CheckRequestNumbers(tt.retries); v.Violations != tt.want {
				t.Errorf("%d violations, want %d: %v", v.Violations, tt.want, v.Details)
			}
		})
	}
}
