package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/test/servertest"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
)

func TestCluster_FollowerForwardsToLeader(t *testing.T) {
	c := servertest.New(t, 3)
	f := newAPI(t, c, c.Follower(c.WaitLeader()))
	sid := f.session(10*time.Second, 0)
	got, st, e := f.acquire("jobs/a", sid, 0)
	if st != 200 {
		t.Fatalf("acquire through follower: %d %s", st, e.Message)
	}
	var l api.Lock
	f.must("GET", "/v1/locks/jobs/a", nil, &l)
	if len(l.Holders) != 1 || l.Holders[0].Session != sid || l.Holders[0].Token != got.Token {
		t.Fatalf("lock read through follower = %+v, want holder %s with token %d", l, sid, got.Token)
	}
	// A stale read is answered by the follower itself once it has applied.
	servertest.WaitFor(t, 5*time.Second, "follower to apply the grant", func() bool {
		var s api.Lock
		f.must("GET", "/v1/locks/jobs/a?stale", nil, &s)
		return len(s.Holders) == 1
	})
}

func TestCluster_LeaderCrashKeepsSessionsLocksAndTokens(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	sid := l.session(30*time.Second, 0)
	before, st, _ := l.acquire("a", sid, 0)
	if st != 200 {
		t.Fatalf("acquire: %d", st)
	}
	survivor := c.Follower(leader)
	c.Crash(leader)
	s := newAPI(t, c, survivor)
	start := time.Now()
	var other string
	servertest.WaitFor(t, 5*time.Second, "a session on the new leader", func() bool {
		d := api.Duration(0)
		st, _ := s.do("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(10 * time.Second), LockDelay: &d}, &struct{ ID *string }{&other})
		return st == 201
	})
	after, st, e := s.acquire("b", other, 0)
	if st != 200 {
		t.Fatalf("acquire after failover: %d %s", st, e.Message)
	}
	t.Logf("first acquire after the crash took %v", time.Since(start))
	var held api.Lock
	s.must("GET", "/v1/locks/a", nil, &held)
	if len(held.Holders) != 1 || held.Holders[0].Session != sid || held.Holders[0].Token != before.Token {
		t.Fatalf("lock a after failover = %+v, want holder %s token %d", held, sid, before.Token)
	}
	if after.Token <= before.Token {
		t.Fatalf("token after failover %d is not larger than %d", after.Token, before.Token)
	}
	// The old session lives on: the new leader gave it a full TTL.
	var ka api.KeepAliveResponse
	s.must("POST", "/v1/sessions/"+sid+"/keepalive", nil, &ka)
}

func TestCluster_PartitionedLeaderStopsServingWhenLeaseRunsOut(t *testing.T) {
	c, old, sid, after, leaseDur := cutOffLeader(t, nil)
	if after > leaseDur {
		t.Fatalf("old leader answered a request sent %v after it was cut off; its lease is %v", after, leaseDur)
	}
	st, e := old.do("GET", "/v1/locks/p", nil, nil)
	if st != 503 || e.Code != api.CodeNoLeader {
		t.Fatalf("read on cut-off leader = %d %q, want 503 no_leader", st, e.Code)
	}
	if st, e := old.do("POST", "/v1/sessions/"+sid+"/keepalive", nil, nil); st != 503 || e.Code != api.CodeNoLeader {
		t.Fatalf("keepalive on cut-off leader = %d %q, want 503 no_leader", st, e.Code)
	}
	// The majority elected a new leader that serves, with the lock intact.
	maj := newAPI(t, c.Cluster, c.Follower(c.leaderOf(old)))
	servertest.WaitFor(t, 5*time.Second, "the majority to serve", func() bool {
		var l api.Lock
		st, _ := maj.do("GET", "/v1/locks/p", nil, &l)
		return st == 200 && len(l.Holders) == 1 && l.Holders[0].Session == sid
	})
}

// cutOffLeader isolates the leader of a fresh cluster and polls it with
// reads and keepalives for 3s. It returns how long after the cut the last
// request it answered was sent, and the master lease's length. Raft's own
// step-down waits LeaderLeaseTimeout without a quorum; it is set to its
// maximum, HeartbeatTimeout, so that the master lease (shorter by the
// drift and the margin) is what must stop the old leader first. tune, if
// not nil, changes every node's configuration further.
func cutOffLeader(t *testing.T, tune func(*lease.Config)) (*cluster, *nodeAPI, string, time.Duration, time.Duration) {
	c := &cluster{servertest.New(t, 3, func(nc *lease.Config) {
		nc.LeaderLeaseTimeout = nc.HeartbeatTimeout
		if tune != nil {
			tune(nc)
		}
	})}
	leader := c.WaitLeader()
	old := newAPI(t, c.Cluster, leader)
	sid := old.session(30*time.Second, 0)
	if _, st, _ := old.acquire("p", sid, 0); st != 200 {
		t.Fatalf("acquire: %d", st)
	}
	nc := c.Nodes[leader].Config().Node
	leaseDur := time.Duration(float64(nc.HeartbeatTimeout)*(1-nc.MaxClockDrift)) - nc.LeaseMargin
	cut := time.Now()
	c.Isolate(leader)
	t.Cleanup(func() {
		if c.Nodes[leader] != nil {
			c.Heal(leader)
		}
	})
	var lastOK time.Time
	for end := cut.Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		sent := time.Now()
		st1, _ := old.do("GET", "/v1/locks/p", nil, nil)
		st2, _ := old.do("POST", "/v1/sessions/"+sid+"/keepalive", nil, nil)
		if st1 == 200 || st2 == 200 {
			lastOK = sent
		}
	}
	after := time.Duration(0)
	if !lastOK.IsZero() {
		after = lastOK.Sub(cut)
	}
	return c, old, sid, after, leaseDur
}

// cluster adds lookups by API to servertest.Cluster.
type cluster struct{ *servertest.Cluster }

// leaderOf returns the position of the node a serves.
func (c *cluster) leaderOf(a *nodeAPI) int {
	for i, s := range c.Nodes {
		if s != nil && s.HTTPURL() == a.base {
			return i
		}
	}
	return -1
}

func TestCluster_KeepalivesWriteNoLogEntries(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	servertest.WaitFor(t, 10*time.Second, "every node in the member table", func() bool {
		n := 0
		for _, m := range l.cluster().Members {
			if m.HTTP != "" {
				n++
			}
		}
		return n == 3
	})
	sid := l.session(10*time.Second, 0)
	before := l.cluster()
	for range 1000 {
		l.must("POST", "/v1/sessions/"+sid+"/keepalive", nil, nil)
	}
	after := l.cluster()
	if after.CommitIndex != before.CommitIndex || after.AppliedIndex != before.AppliedIndex {
		t.Fatalf("1000 keepalives moved commit %d->%d applied %d->%d", before.CommitIndex, after.CommitIndex,
			before.AppliedIndex, after.AppliedIndex)
	}
}

func TestCluster_SessionExpiryReleasesWithLockDelayAndDropsWaiters(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	const ttl, delay = time.Second, 2 * time.Second
	other := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("busy", other, 0); st != 200 {
		t.Fatal("acquire busy")
	}
	doomed := l.session(ttl, delay)
	created := time.Now()
	if _, st, _ := l.acquire("held", doomed, 0); st != 200 {
		t.Fatal("acquire held")
	}
	// The doomed session also waits for "busy"; its waiter must go with it.
	go l.do("POST", "/v1/locks/busy/acquire", api.AcquireRequest{Session: doomed, Wait: api.Duration(time.Minute)}, nil) //nolint:staticcheck // SA2002: do calls Fatal only when it cannot encode or build the request, which this literal request cannot cause
	servertest.WaitFor(t, 5*time.Second, "the waiter to queue", func() bool {
		var lk api.Lock
		l.must("GET", "/v1/locks/busy", nil, &lk)
		return len(lk.Waiters) == 1
	})
	var expired time.Time
	servertest.WaitFor(t, ttl+4*time.Second, "the session to expire", func() bool {
		st, _ := l.do("GET", "/v1/sessions/"+doomed, nil, nil)
		expired = time.Now()
		return st == 410
	})
	if took := expired.Sub(created); took > ttl+2*time.Second {
		t.Fatalf("session expired %v after its last keepalive; want within TTL + 2s", took)
	}
	var busy api.Lock
	l.must("GET", "/v1/locks/busy", nil, &busy)
	if len(busy.Waiters) != 0 {
		t.Fatalf("expired session's waiter still queued: %+v", busy.Waiters)
	}
	_, st, e := l.acquire("held", other, 0)
	if st != 409 || e.Code != api.CodeLockDelay || e.RetryAfter <= 0 {
		t.Fatalf("acquire inside lock-delay = %d %q retry-after %v, want 409 lock_delay with Retry-After", st, e.Code, e.RetryAfter)
	}
	servertest.WaitFor(t, delay+3*time.Second, "the lock-delay to end", func() bool {
		_, st, _ := l.acquire("held", other, 0)
		return st == 200
	})
}

func TestCluster_DestroyReleasesAtOnce(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	a := l.session(30*time.Second, 10*time.Second)
	b := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("d", a, 0); st != 200 {
		t.Fatal("acquire")
	}
	l.must("DELETE", "/v1/sessions/"+a, nil, nil)
	if _, st, e := l.acquire("d", b, 0); st != 200 {
		t.Fatalf("acquire right after destroy = %d %s, want 200 (no lock-delay on destroy)", st, e.Code)
	}
}

func TestCluster_FIFOHandOffOneCommitEach(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	holder := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("q", holder, 0); st != 200 {
		t.Fatal("acquire")
	}
	waiters := []string{l.session(30*time.Second, 0), l.session(30*time.Second, 0), l.session(30*time.Second, 0)}
	grants := make([]chan api.AcquireResponse, len(waiters))
	for i, w := range waiters {
		grants[i] = make(chan api.AcquireResponse, 1)
		go func() {
			r, _, _ := l.acquire("q", w, time.Minute)
			grants[i] <- r
		}()
		servertest.WaitFor(t, 5*time.Second, "waiter to queue", func() bool {
			var lk api.Lock
			l.must("GET", "/v1/locks/q", nil, &lk)
			return len(lk.Waiters) == i+1
		})
	}
	prev := holder
	for i, w := range waiters {
		before := l.cluster().CommitIndex
		l.must("POST", "/v1/locks/q/release", api.SessionRequest{Session: prev}, nil)
		g := <-grants[i]
		after := l.cluster().CommitIndex
		if g.Session != w {
			t.Fatalf("grant %d went to %s, want %s (arrival order)", i, g.Session, w)
		}
		if after != before+1 || g.Token != after {
			t.Fatalf("hand-off %d: commit index %d -> %d, token %d; want one commit whose index is the token", i, before, after, g.Token)
		}
		prev = w
	}
}

func TestCluster_SharedHoldersDoNotStarveExclusiveWaiter(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	acq := func(s, mode string, wait time.Duration) (api.AcquireResponse, int) {
		var r api.AcquireResponse
		st, _ := l.do("POST", "/v1/locks/sh/acquire", api.AcquireRequest{Session: s, Mode: mode, Wait: api.Duration(wait)}, &r)
		return r, st
	}
	r1, r2 := l.session(30*time.Second, 0), l.session(30*time.Second, 0)
	for _, s := range []string{r1, r2} {
		if _, st := acq(s, "shared", 0); st != 200 {
			t.Fatalf("shared holders must coexist: %d", st)
		}
	}
	w, r3 := l.session(30*time.Second, 0), l.session(30*time.Second, 0)
	var wg sync.WaitGroup
	order := make(chan string, 2)
	wg.Add(2)
	go func() { defer wg.Done(); acq(w, "exclusive", time.Minute); order <- "exclusive" }()
	servertest.WaitFor(t, 5*time.Second, "exclusive waiter", func() bool {
		var lk api.Lock
		l.must("GET", "/v1/locks/sh", nil, &lk)
		return len(lk.Waiters) == 1
	})
	go func() { defer wg.Done(); acq(r3, "shared", time.Minute); order <- "shared" }()
	servertest.WaitFor(t, 5*time.Second, "later shared request to queue", func() bool {
		var lk api.Lock
		l.must("GET", "/v1/locks/sh", nil, &lk)
		return len(lk.Waiters) == 2
	})
	l.must("POST", "/v1/locks/sh/release", api.SessionRequest{Session: r1}, nil)
	l.must("POST", "/v1/locks/sh/release", api.SessionRequest{Session: r2}, nil)
	if got := <-order; got != "exclusive" {
		t.Fatalf("first grant after the shared holders left went to %s, want the exclusive waiter", got)
	}
	l.must("POST", "/v1/locks/sh/release", api.SessionRequest{Session: w}, nil)
	if got := <-order; got != "shared" {
		t.Fatalf("second grant = %s", got)
	}
	wg.Wait()
}

func TestCluster_BadInputLeavesStateUnchanged(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	sid := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("x", sid, 0); st != 200 {
		t.Fatal("acquire")
	}
	other := l.session(30*time.Second, 0)
	before := l.cluster().CommitIndex
	var lockBefore api.Lock
	l.must("GET", "/v1/locks/x", nil, &lockBefore)
	cases := []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/v1/locks/x/acquire", map[string]any{"session": sid, "sesion": 1}, 400, api.CodeBadRequest},
		{"POST", "/v1/locks/a//b/acquire", api.AcquireRequest{Session: sid}, 400, api.CodeBadRequest},
		{"POST", "/v1/sessions", map[string]string{"ttl": "100ms"}, 400, api.CodeBadRequest},
		{"POST", "/v1/locks/x/acquire", api.AcquireRequest{Session: "nope"}, 410, api.CodeSessionExpired},
		{"POST", "/v1/locks/x/release", api.SessionRequest{Session: other}, 409, api.CodeNotHolder},
		{"POST", "/v1/locks/x/acquire", api.AcquireRequest{Session: other}, 409, api.CodeLockHeld},
		{"POST", "/v1/locks/x/acquire", map[string]string{"session": sid, "mode": "sideways"}, 400, api.CodeBadRequest},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s", tc.method, tc.path), func(t *testing.T) {
			st, e := l.do(tc.method, tc.path, tc.body, nil)
			if st != tc.status || e.Code != tc.code {
				t.Fatalf("= %d %q (%s), want %d %q", st, e.Code, e.Message, tc.status, tc.code)
			}
		})
	}
	var lockAfter api.Lock
	l.must("GET", "/v1/locks/x", nil, &lockAfter)
	if lockAfter.ModifyIndex != lockBefore.ModifyIndex || lockAfter.Holders[0].Token != lockBefore.Holders[0].Token {
		t.Fatalf("lock changed: %+v -> %+v", lockBefore, lockAfter)
	}
	// Refused writes may still be committed entries (the FSM refuses them
	// deterministically), but none may change a lock or session.
	if after := l.cluster().CommitIndex; after-before > 4 {
		t.Fatalf("commit index moved by %d for bad requests", after-before)
	}
}

// TestCluster_ManySessionsExpireTogether checks the expiry promise (within
// TTL + 2 s of the last keepalive) when many sessions end at once, as when
// a fleet of clients dies together: the leader must not expire them one
// commit at a time.
func TestCluster_ManySessionsExpireTogether(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	const n, ttl = 500, 3 * time.Second
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 10 {
				var s api.Session
				d := api.Duration(0)
				if st, _ := l.do("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &d}, &s); st == 201 {
					ids <- s.ID
				}
			}
		}()
	}
	wg.Wait()
	created := time.Now() // every session's last (and only) keepalive is before this
	if len(ids) != n {
		t.Fatalf("created %d of %d sessions", len(ids), n)
	}
	var gone time.Time
	servertest.WaitFor(t, ttl+10*time.Second, "every session to expire", func() bool {
		var list api.SessionList
		l.must("GET", "/v1/sessions", nil, &list)
		gone = time.Now()
		return len(list.Sessions) == 0
	})
	took := gone.Sub(created)
	t.Logf("%d sessions with TTL %v all expired %v after the last was created", n, ttl, took)
	if took > ttl+2*time.Second {
		t.Fatalf("the last of %d sessions expired %v after its creation; want within TTL + 2s", n, took)
	}
}

// A queued acquire whose caller goes away (a client that hangs up, or a
// follower that dies while forwarding it) keeps its place until its own
// wait runs out, and the client's retry with the same request number finds
// it there: the session is granted before anyone who queued after it.
func TestCluster_WaiterWhoseCallerLeavesKeepsItsPlace(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	f := newAPI(t, c, c.Follower(leader))
	holder := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("q", holder, 0); st != 200 {
		t.Fatal("acquire")
	}
	first, second := l.session(30*time.Second, 0), l.session(30*time.Second, 0)
	waiters := func() []string {
		var lk api.Lock
		l.must("GET", "/v1/locks/q", nil, &lk)
		var out []string
		for _, w := range lk.Waiters {
			out = append(out, w.Session)
		}
		return out
	}

	// The first waiter queues through the follower, and hangs up.
	acq := api.AcquireRequest{Session: first, Wait: api.Duration(time.Minute), Seq: 1}
	ctx, hangUp := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		body, _ := json.Marshal(acq)
		req, _ := http.NewRequestWithContext(ctx, "POST", f.base+"/v1/locks/q/acquire", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	servertest.WaitFor(t, 5*time.Second, "first waiter to queue", func() bool { return len(waiters()) == 1 })
	type answer struct {
		r  api.AcquireResponse
		st int
		e  api.Error
	}
	secondGot := make(chan answer, 1)
	go func() {
		r, st, e := l.acquire("q", second, time.Minute)
		secondGot <- answer{r, st, e}
	}()
	servertest.WaitFor(t, 5*time.Second, "second waiter to queue", func() bool { return len(waiters()) == 2 })
	hangUp()
	if err := <-gone; err == nil {
		t.Fatal("the hung-up request got an answer")
	}
	// Give the leader time to see the forwarded request end.
	time.Sleep(500 * time.Millisecond)
	if got := waiters(); len(got) != 2 || got[0] != first || got[1] != second {
		t.Fatalf("after the caller hung up the queue is %v, want [%s %s]", got, first, second)
	}

	// The retry, same request number, resumes in place.
	firstGot := make(chan answer, 1)
	go func() {
		var r api.AcquireResponse
		st, e := l.do("POST", "/v1/locks/q/acquire", acq, &r)
		firstGot <- answer{r, st, e}
	}()
	time.Sleep(200 * time.Millisecond)
	l.must("POST", "/v1/locks/q/release", api.SessionRequest{Session: holder}, nil)
	a := <-firstGot
	if a.st != 200 || a.r.Session != first {
		t.Fatalf("retry of the first waiter = %d %s %s, want the grant", a.st, a.e.Code, a.e.Message)
	}
	select {
	case b := <-secondGot:
		t.Fatalf("the second waiter was answered %d %s while the first holds the lock", b.st, b.e.Code)
	default:
	}
	l.must("POST", "/v1/locks/q/release", api.SessionRequest{Session: first}, nil)
	if b := <-secondGot; b.st != 200 || b.r.Token <= a.r.Token {
		t.Fatalf("second waiter = %d %s token %d, want a grant after token %d", b.st, b.e.Code, b.r.Token, a.r.Token)
	}
}
