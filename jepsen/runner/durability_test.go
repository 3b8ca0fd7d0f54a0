package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestDurability_EveryAcknowledgedNameIsCompared builds the durability
// check's list of names from a run's history, as the check does, with the
// durability session's acknowledged grants on each, and compares it with
// reads after the restart that lose one grant: every lock and election the
// run was acknowledged a grant on must be compared, not only the lock
// workload's.
func TestDurability_EveryAcknowledgedNameIsCompared(t *testing.T) {
	granted := func(lock string, token uint64) history.Op {
		return history.Op{Lock: lock, Kind: history.Acquire, Session: "w", Token: token, Status: history.OK}
	}
	ops := []history.Op{
		granted(traffic.LockNames[1], 4), granted(traffic.FencedLock, 6), granted(traffic.ElectionName, 8),
		granted("jepsen/late", 9),
		{Lock: "jepsen/refused", Kind: history.Acquire, Session: "w", Status: history.Fail, Code: "lock_held"},
	}
	want := durableNames(ops)
	names := map[string]bool{}
	for i := range want {
		names[want[i].Name] = true
		if i > 0 { // the first lock is given back before the restart
			want[i].Token = uint64(100 + i)
		}
	}
	for _, n := range append(append([]string(nil), traffic.LockNames...), traffic.FencedLock, traffic.ElectionName, "jepsen/late") {
		if !names[n] {
			t.Errorf("%s is not compared", n)
		}
	}
	if names["jepsen/refused"] {
		t.Errorf("a lock nobody was granted is compared")
	}
	intact := func() map[string]durableName {
		got := map[string]durableName{}
		for _, w := range want {
			g := w
			if w.Election {
				g.Value = durableValue
			}
			got[w.Name] = g
		}
		return got
	}
	tests := []struct {
		name   string
		change func(map[string]durableName)
		want   []string // substrings, one per expected violation
	}{
		{"every grant survived", func(map[string]durableName) {}, nil},
		{"a lock workload's grant lost", func(g map[string]durableName) { delete(g, traffic.LockNames[2]) },
			[]string{"lock " + traffic.LockNames[2]}},
		{"the fenced lock's grant lost", func(g map[string]durableName) { delete(g, traffic.FencedLock) },
			[]string{"lock " + traffic.FencedLock}},
		{"the election's leadership lost", func(g map[string]durableName) { delete(g, traffic.ElectionName) },
			[]string{"election " + traffic.ElectionName}},
		{"the election's value lost", func(g map[string]durableName) {
			e := g[traffic.ElectionName]
			e.Value = ""
			g[traffic.ElectionName] = e
		}, []string{"election " + traffic.ElectionName + " after restart: value"}},
		{"a fault's lock granted again with a lower token", func(g map[string]durableName) {
			l := g["jepsen/late"]
			l.Token = 3
			g["jepsen/late"] = l
		}, []string{"lock jepsen/late"}},
		{"a released lock held again", func(g map[string]durableName) {
			l := g[traffic.LockNames[0]]
			l.Token = 2
			g[traffic.LockNames[0]] = l
		}, []string{"lock " + traffic.LockNames[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := intact()
			tt.change(got)
			msgs := compareDurable(want, got)
			if len(msgs) != len(tt.want) {
				t.Fatalf("%d violations, want %d: %q", len(msgs), len(tt.want), msgs)
			}
			for i, w := range tt.want {
				if !strings.Contains(msgs[i], w) {
					t.Errorf("violation %q does not name %q", msgs[i], w)
				}
			}
		})
	}
}

// TestDurability_SessionsSurviveTheRestart compares the sessions alive
// before the restart with what the check saw survivorCheck after the
// cluster was back: each must still exist, hold its lock with the same
// token, and accept a keepalive.
func TestDurability_SessionsSurviveTheRestart(t *testing.T) {
	want := []survivor{{ID: "a", Lock: survivorLock + "0", Token: 11}, {ID: "b", Lock: survivorLock + "1", Token: 12}}
	intact := func() []survivorSeen {
		return []survivorSeen{{Exists: true, Token: 11, KeptAlive: true}, {Exists: true, Token: 12, KeptAlive: true}}
	}
	tests := []struct {
		name   string
		change func([]survivorSeen) []survivorSeen
		want   []string
	}{
		{"both intact", func(s []survivorSeen) []survivorSeen { return s }, nil},
		{"one expired early", func(s []survivorSeen) []survivorSeen {
			s[1] = survivorSeen{Err: "session_expired"}
			return s
		}, []string{"session b"}},
		{"listed but its keepalive refused", func(s []survivorSeen) []survivorSeen {
			s[0].KeptAlive = false
			return s
		}, []string{"session a"}},
		{"its lock forgotten", func(s []survivorSeen) []survivorSeen {
			s[0].Token = 0
			return s
		}, []string{"holds " + survivorLock + "0 with token 0"}},
		{"nothing seen", func([]survivorSeen) []survivorSeen { return nil }, []string{"session a", "session b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compareSurvivors(want, tt.change(intact()))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages, want %d: %q", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("message %q lacks %q", got[i], w)
				}
			}
		})
	}
}

// A survivor's keepalive decides only when the cluster answered about the
// session: accepted, or session_expired. No leader, an unknown outcome or
// a failed connection is asked again, not counted as an expiry.
func TestDurability_OnlyADefiniteKeepaliveDecides(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{&api.Error{Code: api.CodeSessionExpired}, true},
		{&api.Error{Code: api.CodeNoLeader}, false},
		{&api.Error{Code: api.CodeTimeout}, false},
		{errors.New("connection refused"), false},
	} {
		if got := definite(tc.err); got != tc.want {
			t.Errorf("definite(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
