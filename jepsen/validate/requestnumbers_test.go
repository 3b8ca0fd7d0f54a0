package validate

import (
	"strings"
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
		{"a repeat refused because the session ended is no breach", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			{Session: "s1", Seq: 1, Step: traffic.RetryRepeat, Status: fail, Code: "session_expired"}}, 0},
		// The promise is the first answer, refusals included.
		{"a repeat refused while the session holds the lock", []traffic.Retry{r(1, traffic.RetryFirst, ok, 5),
			{Session: "s1", Seq: 1, Step: traffic.RetryRepeat, Status: fail, Code: "lock_held"}}, 1},
		{"a repeat of a refused request granted", []traffic.Retry{{Session: "s1", Seq: 1, Step: traffic.RetryFirst, Status: fail, Code: "lock_held"},
			r(1, traffic.RetryRepeat, ok, 7)}, 1},
		{"a repeat of a refused request refused", []traffic.Retry{{Session: "s1", Seq: 1, Step: traffic.RetryFirst, Status: fail, Code: "lock_held"},
			{Session: "s1", Seq: 1, Step: traffic.RetryRepeat, Status: fail, Code: "request_repeated"}}, 0},
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

// TestCheckRequestNumbers_RefusedRepeat is issue 24's breach: a repeat
// (same session, same seq) answered with a refusal while the session
// still holds the lock its first request was granted. The old checker
// compared only repeats that succeeded and passes it; the new one requires
// the first answer, refusals included. A refusal because the session
// ended is no breach for either.
func TestCheckRequestNumbers_RefusedRepeat(t *testing.T) {
	first := traffic.Retry{Session: "s1", Seq: 7, Step: traffic.RetryFirst, Status: history.OK, Token: 40, Call: 10, Return: 20}
	repeat := traffic.Retry{Session: "s1", Seq: 7, Step: traffic.RetryRepeat, Status: history.Fail, Code: "lock_held", Call: 30, Return: 40}
	breach := []traffic.Retry{first, repeat}
	if v := oldCheckRequestNumbers(breach); v.Violations != 0 {
		t.Fatalf("the old checker caught it already: %v", v.Details)
	}
	v := CheckRequestNumbers(breach)
	if v.Violations != 1 || !strings.Contains(v.Details[0], "was refused (lock_held") {
		t.Fatalf("new checker: %s %v", v, v.Details)
	}
	repeat.Code = "session_expired"
	if v := CheckRequestNumbers([]traffic.Retry{first, repeat}); !v.OK() {
		t.Fatalf("a repeat refused because the session ended: %s %v", v, v.Details)
	}
}
