package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

func acq(lock, session string, token uint64, call, ret int64) history.Op {
	return history.Op{Lock: lock, Kind: history.Acquire, Session: session, Status: history.OK, Token: token, Call: call, Return: ret}
}

func unknownAcq(lock, session string, call int64) history.Op {
	return history.Op{Lock: lock, Kind: history.Acquire, Session: session, Status: history.Unknown, Call: call, Return: history.Infinity}
}

func refused(lock, session, code string, call, ret int64) history.Op {
	return history.Op{Lock: lock, Kind: history.Acquire, Session: session, Status: history.Fail, Code: code, Call: call, Return: ret}
}

func TestCheckTokens_Violations(t *testing.T) {
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"increasing", []history.Op{acq("l", "a", 5, 0, 10), acq("l", "b", 7, 20, 30)}, 0},
		{"concurrent may go either way", []history.Op{acq("l", "a", 7, 0, 30), acq("l", "b", 5, 10, 40)}, 0},
		{"same grant twice", []history.Op{acq("l", "a", 5, 0, 10), acq("l", "a", 5, 20, 30)}, 0},
		{"goes back in real time", []history.Op{acq("l", "a", 7, 0, 10), acq("m", "b", 5, 20, 30)}, 1},
		{"re-acquire after an unknown acquire", []history.Op{
			{Lock: "l", Kind: history.Acquire, Session: "a", Status: history.Unknown, Call: 0, Return: history.Infinity},
			acq("m", "b", 7, 10, 20), acq("l", "a", 5, 30, 40)}, 0},
		{"one token, two sessions", []history.Op{acq("l", "a", 5, 0, 10), acq("l", "b", 5, 5, 30)}, 1},
		// A refusal says the session did not hold the lock when it was
		// decided: an earlier attempt of unknown outcome can have been
		// granted only after the refusal's invocation.
		{"lower token after a held refusal", []history.Op{unknownAcq("l", "a", 0),
			acq("m", "b", 9, 5, 10), refused("l", "a", "lock_held", 20, 30), acq("l", "a", 4, 40, 50)}, 1},
		{"lower token after a lock-delay refusal", []history.Op{unknownAcq("l", "a", 0),
			acq("m", "b", 9, 5, 10), refused("l", "a", "lock_delay", 20, 30), acq("l", "a", 4, 40, 50)}, 1},
		{"the attempt may still land after the refusal", []history.Op{unknownAcq("l", "a", 0),
			refused("l", "a", "lock_held", 20, 30), acq("m", "b", 9, 25, 35), acq("l", "a", 8, 40, 50)}, 0},
		// The library gives back a lock after an acquire of unknown
		// outcome; that release's own outcome is unknown too, so the
		// acquire may still have been the one granted (seen in a
		// campaign: the give-back never took effect, and a later acquire
		// found the session holding the earlier grant's token).
		{"an unknown give-back does not end the window", []history.Op{unknownAcq("l", "a", 0),
			{Lock: "l", Kind: history.Release, Session: "a", Status: history.Unknown, Call: 1, Return: history.Infinity},
			acq("m", "b", 9, 5, 10), acq("l", "a", 8, 40, 50)}, 0},
		{"an acknowledged release does end it", []history.Op{unknownAcq("l", "a", 0),
			{Lock: "l", Kind: history.Release, Session: "a", Status: history.OK, Call: 1, Return: 3},
			acq("m", "b", 9, 5, 10), acq("l", "a", 8, 40, 50)}, 1},
		{"a failure that says nothing of the lock", []history.Op{unknownAcq("l", "a", 0),
			acq("m", "b", 9, 5, 10), refused("l", "a", "unavailable", 20, 30), acq("l", "a", 4, 40, 50)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.ops { // in invocation order, as the recorder gives them
				tt.ops[i].ID = int64(i + 1)
			}
			if got := CheckTokens(tt.ops, nil).Violations; got != tt.want {
				t.Fatalf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckLeaseTiming_Violations(t *testing.T) {
	hold := history.Hold{Lock: "l", Session: "a", Token: 5, From: 10, To: 100}
	tests := []struct {
		name  string
		ops   []history.Op
		holds []history.Hold
		want  int
	}{
		{"after the belief ended", []history.Op{acq("l", "b", 7, 90, 110)}, []history.Hold{hold}, 0},
		{"inside the belief", []history.Op{acq("l", "b", 7, 40, 50)}, []history.Hold{hold}, 1},
		{"paused holder left out", []history.Op{acq("l", "b", 7, 40, 50)},
			[]history.Hold{{Lock: "l", Session: "a", From: 10, To: 100, Paused: true}}, 0},
		{"own session", []history.Op{acq("l", "a", 5, 40, 50)}, []history.Hold{hold}, 0},
		{"other lock", []history.Op{acq("m", "b", 7, 40, 50)}, []history.Hold{hold}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLeaseTiming(tt.ops, tt.holds).Violations; got != tt.want {
				t.Fatalf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckFencing_Violations(t *testing.T) {
	w := func(client string, tok uint64, ok bool, at int64) traffic.Write {
		return traffic.Write{Client: client, Session: client, Token: tok, Accepted: ok, At: at}
	}
	g := func(client string, tok uint64, call, ret int64) traffic.Grant {
		return traffic.Grant{Client: client, Session: client, Token: tok, Call: call, Return: ret}
	}
	tests := []struct {
		name   string
		writes []traffic.Write
		grants []traffic.Grant
		want   int
	}{
		{"fenced log", []traffic.Write{w("a", 5, true, 10), w("b", 7, true, 30), w("b", 7, true, 40), w("a", 5, false, 50)},
			[]traffic.Grant{g("a", 5, 0, 5), g("b", 7, 20, 25)}, 0},
		{"stale write accepted", []traffic.Write{w("a", 5, true, 10), w("b", 7, true, 30), w("a", 5, true, 50)},
			[]traffic.Grant{g("a", 5, 0, 5), g("b", 7, 20, 25)}, 1},
		// The resource refuses the newer holder's writes, as it should
		// given the tokens: the fault is lockd's, in the grants.
		{"newer holder granted a lower token", []traffic.Write{w("a", 10, true, 10), w("b", 5, false, 40)},
			[]traffic.Grant{g("a", 10, 0, 5), g("b", 5, 20, 30)}, 1},
		{"newer holder granted the same token", nil,
			[]traffic.Grant{g("a", 10, 0, 5), g("b", 10, 20, 30)}, 1},
		{"concurrent acquires may be granted in either order", nil,
			[]traffic.Grant{g("a", 10, 0, 25), g("b", 5, 20, 30)}, 0},
		{"same grant reported twice", nil, []traffic.Grant{g("a", 10, 0, 5), g("a", 10, 20, 30)}, 0},
		{"grant without a window left out", nil, []traffic.Grant{g("a", 10, 0, 5), {Client: "b", Session: "b", Token: 5}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckFencing(tt.writes, tt.grants); got.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", got.Violations, tt.want, got.Details)
			}
		})
	}
}

func TestCheckLeaders_Violations(t *testing.T) {
	s := func(round int, node, state string, term uint64) Sample {
		return Sample{Round: round, Node: node, State: state, Term: term}
	}
	fine := []Sample{s(0, "n1", "Leader", 2), s(0, "n2", "Follower", 2), s(1, "n1", "Leader", 2), s(1, "n2", "Leader", 3)}
	if got := CheckLeaders(fine, false).Violations; got != 0 {
		t.Fatalf("raft, one leader per term: %d violations", got)
	}
	if got := CheckLeaders(append(fine, s(2, "n3", "Leader", 3)), false).Violations; got != 1 {
		t.Fatalf("raft, two leaders in term 3: %d violations, want 1", got)
	}
	if got := CheckLeaders(fine, true).Violations; got != 1 {
		t.Fatalf("classic, two coordinators in round 1: %d violations, want 1", got)
	}
}

// TestCheckLinearizable_NamesTheBrokenLock checks that a violation says
// which lock broke and which operation could not be placed.
func TestCheckLinearizable_NamesTheBrokenLock(t *testing.T) {
	ms := int64(time.Millisecond)
	ops := []history.Op{
		{ID: 1, Client: 0, Lock: "a", Kind: history.Acquire, Session: "s1", Token: 5, Status: history.OK, Call: 0, Return: 10 * ms},
		{ID: 2, Client: 1, Lock: "a", Kind: history.Read, Node: "n2", Status: history.OK, Call: 20 * ms, Return: 30 * ms}, // free: stale
		{ID: 3, Client: 0, Lock: "b", Kind: history.Acquire, Session: "s1", Token: 6, Status: history.OK, Call: 0, Return: 10 * ms},
		{ID: 4, Client: 1, Lock: "b", Kind: history.Read, Node: "n1", Holder: "s1", Token: 6, Status: history.OK, Call: 20 * ms, Return: 30 * ms},
	}
	v := CheckLinearizable(ops, nil, 10*time.Second, t.TempDir())
	if v.Violations != 1 {
		t.Fatalf("violations = %d, want 1 (lock a only): %v", v.Violations, v.Details)
	}
	d := strings.Join(v.Details, "\n")
	for _, want := range []string{"a is not linearizable", "1 of its 2 operations", "read@n2 -> free", "0.020s"} {
		if !strings.Contains(d, want) {
			t.Errorf("details lack %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "b is not") {
		t.Errorf("lock b is linearizable, yet reported:\n%s", d)
	}
}

// TestCheckTokens_ChildGrantsInOrder is issue 24's breach: a child fence
// client's grant of the fenced lock is ordered against every other lock's
// acknowledged grants, as an in-process worker's is. A child granted token
// 50 after another lock's token 100 was acknowledged passed every checker:
// the old tokens checker took the child's grants for uniqueness only (and
// the fencing checker orders the fenced lock's grants among themselves).
func TestCheckTokens_ChildGrantsInOrder(t *testing.T) {
	const f = traffic.FencedLock
	ops := withIDs(acq("jepsen/l0", "w", 100, 0, 10))
	child := ExtraGrant{Lock: f, Session: "c", Token: 50, Call: 20, Return: 30}
	if v := oldCheckTokens(ops, []ExtraGrant{child}); v.Violations != 0 {
		t.Fatalf("the old checker caught it already: %v", v.Details)
	}
	if v := CheckFencing(nil, []traffic.Grant{{Client: "child-0", Session: "c", Token: 50, Call: 20, Return: 30, Child: true}}); v.Violations != 0 {
		t.Fatalf("fencing caught it already: %v", v.Details)
	}
	v := CheckTokens(ops, []ExtraGrant{child})
	if v.Violations != 1 || !strings.Contains(v.Details[0], "token went back") {
		t.Fatalf("new checker: %s %v", v, v.Details)
	}
	tests := []struct {
		name  string
		extra []ExtraGrant
		want  int
	}{
		{"a child's grant after, with a higher token", []ExtraGrant{{Lock: f, Session: "c", Token: 150, Call: 20, Return: 30}}, 0},
		{"a child's grant concurrent with the other lock's", []ExtraGrant{{Lock: f, Session: "c", Token: 50, Call: 5, Return: 30}}, 0},
		{"a child's grant whose window is unknown", []ExtraGrant{{Lock: f, Session: "c", Token: 50}}, 0},
		// A child re-finding its holding reports it again later: the grant
		// was made within the first report's window.
		{"a holding reported again after the other grant", []ExtraGrant{{Lock: f, Session: "c", Token: 50, Call: 1, Return: 5},
			{Lock: f, Session: "c", Token: 50, Call: 20, Return: 30}}, 0},
		// An in-process worker's grant of the fenced lock is in the history
		// and in the resource's reports: it counts once, from the history.
		{"a worker's grant reported to the resource too", []ExtraGrant{{Lock: "jepsen/l0", Session: "w", Token: 100, Call: 20, Return: 30}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := CheckTokens(ops, tt.extra); v.Violations != tt.want {
				t.Fatalf("violations = %d, want %d: %v", v.Violations, tt.want, v.Details)
			}
		})
	}
	// The other way round: a child's grant acknowledged before a worker's
	// was invoked, with the higher token.
	later := withIDs(acq("jepsen/l0", "w", 100, 40, 50))
	if v := CheckTokens(later, []ExtraGrant{{Lock: f, Session: "c", Token: 150, Call: 1, Return: 5}}); v.Violations != 1 {
		t.Fatalf("a worker's grant after a child's higher one: %d violations", v.Violations)
	}
}
