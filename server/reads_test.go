package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
)

// TestCluster_BlockingQueryReturnsOnChangeOrAtWait asks a follower (which
// forwards) for a lock with ?index=<current>&wait=...: the query must stay
// pending while nothing changes, and while other objects change, then
// return with the new modify_index once this lock changes; with no change it
// stays pending and returns at wait with the same index. Elections block the
// same way. Only order is asserted (pending at a moment, returned after
// another), not how long anything took.
func TestCluster_BlockingQueryReturnsOnChangeOrAtWait(t *testing.T) {
	c := servertest.New(t, 3)
	f := newAPI(t, c, c.Follower(c.WaitLeader()))
	a, b := f.session(30*time.Second, 0), f.session(30*time.Second, 0)
	acquireShared := func(name, sid string) api.AcquireResponse {
		t.Helper()
		var r api.AcquireResponse
		f.must("POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: sid, Mode: "shared"}, &r)
		return r
	}
	first := acquireShared("bq", a)
	var l api.Lock
	f.must("GET", "/v1/locks/bq", nil, &l)
	if l.ModifyIndex != first.Token {
		t.Fatalf("lock bq at modify_index %d, want %d (its grant)", l.ModifyIndex, first.Token)
	}

	q := blockingGet[api.Lock](f, fmt.Sprintf("/v1/locks/bq?index=%d&wait=20s", l.ModifyIndex))
	q.expectPending(t, "before any write")
	acquireShared("other", a)
	f.session(30*time.Second, 0)
	q.expectPending(t, "after writes to another lock and a new session")
	second := acquireShared("bq", b)
	got := q.result(t, 10*time.Second)
	if got.ModifyIndex != second.Token || len(got.Holders) != 2 {
		t.Fatalf("blocking query returned modify_index %d with %d holders, want %d with 2 (the second grant)",
			got.ModifyIndex, len(got.Holders), second.Token)
	}

	// Nothing changes: it returns at wait with the same index.
	idle := blockingGet[api.Lock](f, fmt.Sprintf("/v1/locks/bq?index=%d&wait=1500ms", got.ModifyIndex))
	idle.expectPending(t, "with no write")
	if same := idle.result(t, 10*time.Second); same.ModifyIndex != got.ModifyIndex {
		t.Fatalf("idle blocking query returned modify_index %d, want %d", same.ModifyIndex, got.ModifyIndex)
	}

	// Elections have blocking queries too.
	var e api.Election
	f.must("GET", "/v1/elections/boss", nil, &e)
	eq := blockingGet[api.Election](f, fmt.Sprintf("/v1/elections/boss?index=%d&wait=20s", e.ModifyIndex))
	eq.expectPending(t, "before the campaign")
	acquireShared("bq", f.session(30*time.Second, 0))
	eq.expectPending(t, "after a write to a lock")
	f.must("POST", "/v1/elections/boss/campaign", api.CampaignRequest{Session: a, Value: "v"}, nil)
	if ge := eq.result(t, 10*time.Second); ge.Session != a || ge.ModifyIndex <= e.ModifyIndex {
		t.Fatalf("election blocking query returned leader %q at %d, want %q after %d", ge.Session, ge.ModifyIndex, a, e.ModifyIndex)
	}
}

// pendingGet is a GET running in the background.
type pendingGet[T any] struct {
	path string
	done chan pendingResult[T]
}

type pendingResult[T any] struct {
	v   T
	st  int
	err api.Error
}

func blockingGet[T any](a *nodeAPI, path string) *pendingGet[T] {
	q := &pendingGet[T]{path: path, done: make(chan pendingResult[T], 1)}
	go func() {
		var r pendingResult[T]
		r.st, r.err = a.do("GET", path, nil, &r.v)
		q.done <- r
	}()
	return q
}

// expectPending fails the test if the query returns within 300ms.
func (q *pendingGet[T]) expectPending(t *testing.T, when string) {
	t.Helper()
	select {
	case r := <-q.done:
		t.Fatalf("GET %s returned %s (%d %s %+v); it should still block", q.path, when, r.st, r.err.Code, r.v)
	case <-time.After(300 * time.Millisecond):
	}
}

// result waits for the query's answer, which must be a 200.
func (q *pendingGet[T]) result(t *testing.T, within time.Duration) T {
	t.Helper()
	select {
	case r := <-q.done:
		if r.st != 200 {
			t.Fatalf("GET %s = %d %s: %s", q.path, r.st, r.err.Code, r.err.Message)
		}
		return r.v
	case <-time.After(within):
		t.Fatalf("GET %s did not return within %v", q.path, within)
	}
	var zero T
	return zero
}

func TestCluster_ConsistentReadsConfirmQuorum(t *testing.T) {
	c := servertest.New(t, 3, func(nc *lease.Config) { nc.LeaderLeaseTimeout = nc.HeartbeatTimeout })
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	var lk api.Lock
	l.must("GET", "/v1/locks/c?consistent", nil, &lk)
	c.Isolate(leader)
	// Cut off, the leader cannot confirm a quorum: consistent reads fail
	// at once, whatever the lease says.
	if st, e := l.do("GET", "/v1/locks/c?consistent", nil, nil); st != 503 || e.Code != api.CodeNoLeader {
		t.Fatalf("consistent read on a cut-off leader = %d %q, want 503 no_leader", st, e.Code)
	}
	// Stale reads are still answered locally.
	if st, _ := l.do("GET", "/v1/locks/c?stale", nil, nil); st != 200 {
		t.Fatalf("stale read = %d, want 200", st)
	}
	c.Heal(leader)
}

func TestCluster_JoinAndRemoveMember(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	nc := lease.DefaultConfig()
	nc.ID, nc.DataDir, nc.Join = "n4", filepath.Join(t.TempDir(), "n4"), c.Nodes[0].HTTPURL()
	s4, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", Logger: servertest.Logger(t, "n4")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s4.Abort() })
	servertest.WaitFor(t, 15*time.Second, "n4 to join as a voter with its HTTP address", func() bool {
		for _, m := range l.cluster().Members {
			if m.ID == "n4" && m.Voter && m.HTTP == s4.HTTPURL() {
				return true
			}
		}
		return false
	})
	// The new member serves the API by forwarding.
	four := &nodeAPI{t: t, base: s4.HTTPURL()}
	servertest.WaitFor(t, 10*time.Second, "n4 to be ready", func() bool {
		st, _ := four.do("GET", "/readyz", nil, nil)
		return st == 200
	})
	four.session(10*time.Second, 0)

	l.must("DELETE", "/v1/cluster/members/n4", nil, nil)
	for _, m := range l.cluster().Members {
		if m.ID == "n4" {
			t.Fatalf("n4 still a member after removal: %+v", m)
		}
	}
	if st, e := l.do("DELETE", "/v1/cluster/members/n9", nil, nil); st != 404 || e.Code != api.CodeNotFound {
		t.Fatalf("removing an unknown member = %d %q, want 404 not_found", st, e.Code)
	}
}

func TestCluster_GracefulLeaderCloseHandsOver(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	sid := l.session(30*time.Second, 0)
	r, st, _ := l.acquire("g", sid, 0)
	if st != 200 {
		t.Fatal("acquire")
	}
	if err := c.Nodes[leader].Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	c.Nodes[leader] = nil
	next := c.WaitLeader()
	if next == leader {
		t.Fatal("closed node still leads")
	}
	var got api.Lock
	newAPI(t, c, next).must("GET", "/v1/locks/g", nil, &got)
	if len(got.Holders) != 1 || got.Holders[0].Token != r.Token {
		t.Fatalf("lock after handover = %+v", got)
	}
}

func TestCluster_RawBadInput(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	before := l.cluster().CommitIndex
	post := func(path, body string) (int, string) {
		resp, err := http.Post(c.Nodes[leader].HTTPURL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.String()
	}
	tests := []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/sessions", `{"ttl":`, 400, api.CodeBadRequest},
		{"/v1/sessions", `{"ttl":"25h"}`, 400, api.CodeBadRequest},
		{"/v1/sessions", `{"lock_delay":"2m"}`, 400, api.CodeBadRequest},
		{"/v1/locks/a/acquire", `not json`, 400, api.CodeBadRequest},
		{"/v1/locks/a/acquire", `{"session":"x"} trailing`, 400, api.CodeBadRequest},
		{"/v1/sessions", `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, 413, api.CodeTooLarge},
	}
	for _, tt := range tests {
		st, body := post(tt.path, tt.body)
		if st != tt.status || !strings.Contains(body, `"code":"`+tt.code+`"`) || !strings.Contains(body, `"error":"`) {
			t.Errorf("POST %s %.40q = %d %s, want %d %s", tt.path, tt.body, st, body, tt.status, tt.code)
		}
	}
	if after := l.cluster().CommitIndex; after != before {
		t.Fatalf("bad input reached the log: commit index %d -> %d", before, after)
	}
}

// TestCluster_LateRequestIsIgnored replays an acquire after the release
// that followed it, as an abandoned HTTP request that reached the leader
// late would: the request number makes the leader answer it without
// granting the lock again.
func TestCluster_LateRequestIsIgnored(t *testing.T) {
	c := servertest.New(t, 3)
	l := newAPI(t, c, c.WaitLeader())
	sid := l.session(30*time.Second, 0)
	acq := api.AcquireRequest{Session: sid, Seq: 1}
	l.must("POST", "/v1/locks/z/acquire", acq, nil)
	l.must("POST", "/v1/locks/z/release", api.SessionRequest{Session: sid, Seq: 2}, nil)
	// The lock is free: the refusal says the request repeats one applied,
	// not that another session holds the lock.
	if st, e := l.do("POST", "/v1/locks/z/acquire", acq, nil); st != 409 || e.Code != api.CodeRepeated {
		t.Fatalf("late acquire = %d %q, want 409 request_repeated", st, e.Code)
	}
	var lk api.Lock
	l.must("GET", "/v1/locks/z", nil, &lk)
	if len(lk.Holders) != 0 {
		t.Fatalf("late acquire re-granted the lock: %+v", lk.Holders)
	}
}
