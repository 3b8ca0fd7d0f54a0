package server_test

import (
	"testing"
	"time"

	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/test/servertest"
)

// graceTTL is the TTL of the sessions the failover tests watch: short, so
// that a whole TTL fits in the test, and several times the failover time.
const graceTTL = 3 * time.Second

// TestCluster_InheritedSessionsGetAFullTTLAfterFailover crashes the leader
// right after the last keepalive of some sessions. The new leader knows
// nothing of when their keepalives came, so it must give each a full TTL
// from the moment it starts serving: every session is still alive at 90%
// of a TTL after that moment (long after a TTL counted from the last
// keepalive), and, with no keepalive, expires within TTL + 2s of it.
func TestCluster_InheritedSessionsGetAFullTTLAfterFailover(t *testing.T) {
	g := failoverSessions(t, nil)
	t.Logf("new leader served %v after the last keepalive; %d of %d sessions alive at 0.9 TTL; all expired %v after it served",
		g.failover, g.alive, g.sessions, g.expired)
	if g.failover <= graceTTL/10 {
		t.Fatalf("the failover took %v: too quick to tell a TTL from the new leader from one from the last keepalive", g.failover)
	}
	if g.alive != g.sessions {
		t.Fatalf("%d of %d inherited sessions died before 0.9 TTL from the new leader's start", g.sessions-g.alive, g.sessions)
	}
	if g.expired < 0 || g.expired > graceTTL+2*time.Second {
		t.Fatalf("inherited sessions without keepalives were not all gone within TTL + 2s of the new leader's start (%v)", g.expired)
	}
}

type graceRun struct {
	sessions int
	failover time.Duration // last keepalive -> new leader serving
	alive    int           // sessions alive 0.9 TTL after the new leader served
	expired  time.Duration // new leader serving -> every session gone; -1 if not within TTL + 5s
}

// failoverSessions creates sessions on the leader, keeps them alive once
// more, crashes the leader and watches them on the node that takes over;
// tune, if not nil, changes every node's configuration.
func failoverSessions(t *testing.T, tune func(*lease.Config)) graceRun {
	var tunes []func(*lease.Config)
	if tune != nil {
		tunes = append(tunes, tune)
	}
	c := servertest.New(t, 3, tunes...)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	var ids []string
	for range 3 {
		ids = append(ids, l.session(graceTTL, 0))
	}
	time.Sleep(graceTTL / 2) // so that a deadline counted from creation would differ too
	for _, id := range ids {
		l.must("POST", "/v1/sessions/"+id+"/keepalive", nil, nil)
	}
	lastKeepalive := time.Now()
	c.Crash(leader)

	next := -1
	servertest.WaitFor(t, 10*time.Second, "a new leader to serve", func() bool {
		for i, s := range c.Nodes {
			if s != nil && serving(s) {
				next = i
				return true
			}
		}
		return false
	})
	served := time.Now()
	g := graceRun{sessions: len(ids), failover: served.Sub(lastKeepalive), expired: -1}
	a := newAPI(t, c, next)
	time.Sleep(time.Until(served.Add(graceTTL * 9 / 10)))
	for _, id := range ids {
		if sessionAlive(t, a, id) {
			g.alive++
		}
	}
	for time.Since(served) < graceTTL+5*time.Second {
		gone := 0
		for _, id := range ids {
			if !sessionAlive(t, a, id) {
				gone++
			}
		}
		if gone == len(ids) {
			g.expired = time.Since(served)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return g
}

// sessionAlive reads a session on a serving node: true for 200, false for
// 410. It retries a brief no_leader and fails the test on anything else.
func sessionAlive(t *testing.T, a *nodeAPI, id string) bool {
	t.Helper()
	for range 50 {
		switch st, e := a.do("GET", "/v1/sessions/"+id, nil, nil); st {
		case 200:
			return true
		case 410:
			return false
		case 503:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("GET session %s: %d %s %s", id, st, e.Code, e.Message)
		}
	}
	t.Fatalf("GET session %s: no answer but no_leader for a second", id)
	return false
}
