package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/server"
	"github.com/lockd/lockd/internal/servertest"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/lease"
)

func TestCluster_BlockingQueryReturnsOnChangeOrAtWait(t *testing.T) {
	c := servertest.New(t, 3)
	f := newAPI(t, c, c.Follower(c.WaitLeader()))
	var l wire.Lock
	f.must("GET", "/v1/locks/bq", nil, &l)
	sid := f.session(30*time.Second, 0)

	done := make(chan wire.Lock, 1)
	go func() {
		var got wire.Lock
		f.must("GET", fmt.Sprintf("/v1/locks/bq?index=%d&wait=20s", l.ModifyIndex), nil, &got)
		done <- got
	}()
	time.Sleep(200 * time.Millisecond) // let the query block; the change below must wake it
	r, st, _ := f.acquire("bq", sid, 0)
	if st != 200 {
		t.Fatal("acquire")
	}
	select {
	case got := <-done:
		if got.ModifyIndex <= l.ModifyIndex || len(got.Holders) != 1 || got.Holders[0].Token != r.Token {
			t.Fatalf("blocking query returned %+v, want the grant at %d", got, r.Token)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not return after the change")
	}
	// Nothing changes: it returns at wait with the current state.
	start := time.Now()
	var same wire.Lock
	f.must("GET", fmt.Sprintf("/v1/locks/bq?index=%d&wait=300ms", r.Token), nil, &same)
	if waited := time.Since(start); waited < 300*time.Millisecond || same.ModifyIndex != r.Token {
		t.Fatalf("idle blocking query returned after %v with index %d", waited, same.ModifyIndex)
	}
	// Elections have blocking queries too.
	var e wire.Election
	f.must("GET", "/v1/elections/boss", nil, &e)
	go func() {
		var got wire.Election
		f.must("GET", fmt.Sprintf("/v1/elections/boss?index=%d&wait=20s", e.ModifyIndex), nil, &got)
		done <- wire.Lock{Name: got.Session}
	}()
	time.Sleep(200 * time.Millisecond)
	f.must("POST", "/v1/elections/boss/campaign", wire.CampaignRequest{Session: sid, Value: "v"}, nil)
	select {
	case got := <-done:
		if got.Name != sid {
			t.Fatalf("election observe returned leader %q, want %q", got.Name, sid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("election blocking query did not return")
	}
}

func TestCluster_ConsistentReadsConfirmQuorum(t *testing.T) {
	c := servertest.New(t, 3, func(nc *lease.Config) { nc.LeaderLeaseTimeout = nc.HeartbeatTimeout })
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	var lk wire.Lock
	l.must("GET", "/v1/locks/c?consistent", nil, &lk)
	c.Isolate(leader)
	// Cut off, the leader cannot confirm a quorum: consistent reads fail
	// at once, whatever the lease says.
	if st, e := l.do("GET", "/v1/locks/c?consistent", nil, nil); st != 503 || e.Code != wire.CodeNoLeader {
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
	t.Cleanup(func() { s4.Abort() })
	servertest.WaitFor(t, 15*time.Second, "n4 to join as a voter with its HTTP address", func() bool {
		for _, m := range l.cluster().Members {
			if m.ID == "n4" && m.Voter && m.HTTP == s4.HTTPURL() {
				return true
			}
		}
		return false
	})
	// The new member serves the API by forwarding.
	four := &api{t: t, base: s4.HTTPURL()}
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
	if st, e := l.do("DELETE", "/v1/cluster/members/n9", nil, nil); st != 404 || e.Code != wire.CodeNotFound {
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
	var got wire.Lock
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
		buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.String()
	}
	tests := []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/sessions", `{"ttl":`, 400, wire.CodeBadRequest},
		{"/v1/sessions", `{"ttl":"25h"}`, 400, wire.CodeBadRequest},
		{"/v1/sessions", `{"lock_delay":"2m"}`, 400, wire.CodeBadRequest},
		{"/v1/locks/a/acquire", `not json`, 400, wire.CodeBadRequest},
		{"/v1/locks/a/acquire", `{"session":"x"} trailing`, 400, wire.CodeBadRequest},
		{"/v1/sessions", `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, 413, wire.CodeTooLarge},
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
	acq := wire.AcquireRequest{Session: sid, Seq: 1}
	l.must("POST", "/v1/locks/z/acquire", acq, nil)
	l.must("POST", "/v1/locks/z/release", wire.SessionRequest{Session: sid, Seq: 2}, nil)
	if st, e := l.do("POST", "/v1/locks/z/acquire", acq, nil); st != 409 || e.Code != wire.CodeLockHeld {
		t.Fatalf("late acquire = %d %q, want 409 lock_held", st, e.Code)
	}
	var lk wire.Lock
	l.must("GET", "/v1/locks/z", nil, &lk)
	if len(lk.Holders) != 0 {
		t.Fatalf("late acquire re-granted the lock: %+v", lk.Holders)
	}
}
