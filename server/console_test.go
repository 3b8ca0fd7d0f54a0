package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// The fields the status page's operator view reads: each member's applied
// index as the leader knows it, the node's version, and an election's
// grant time, queue and lock-delay.

// TestCluster_LeaderReportsMembersAppliedIndexAndVersion: the leader's
// GET /v1/cluster gives every member an applied_index (its own for
// itself, the one each follower reported in the lease exchange for the
// others), which catches up with the leader's once writes stop; a
// follower's answer has none. Every node names its own version.
func TestCluster_LeaderReportsMembersAppliedIndexAndVersion(t *testing.T) {
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) { cfg.Version = "v-test" })
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	l.session(30*time.Second, 0)
	l.session(30*time.Second, 0)
	var last api.Cluster
	servertest.WaitFor(t, 10*time.Second, "every member's applied index to reach the leader's", func() bool {
		last = l.cluster()
		for _, m := range last.Members {
			if m.AppliedIndex == nil || *m.AppliedIndex != last.AppliedIndex {
				return false
			}
		}
		return len(last.Members) == 3
	})
	for _, m := range last.Members {
		if m.Leader != (m.ID == last.NodeID) || (m.LastContact == nil) != m.Leader {
			t.Errorf("member %+v on the leader: want last_contact on the followers only", m)
		}
	}
	if last.Version != "v-test" {
		t.Errorf("leader's version %q, want v-test", last.Version)
	}
	f := newAPI(t, c, c.Follower(leader)).cluster()
	for _, m := range f.Members {
		if m.AppliedIndex != nil || m.LastContact != nil {
			t.Errorf("member %s on a follower: applied_index %v, last_contact %v, want neither", m.ID, m.AppliedIndex, m.LastContact)
		}
	}
	if f.Version != "v-test" {
		t.Errorf("follower's version %q, want v-test", f.Version)
	}
}

// TestCluster_ElectionShowsGrantWaitersAndLockDelay: an election shows
// when its leader was granted it and who queues for it, in order, and,
// after its leader's session expired, the end of its lock-delay.
func TestCluster_ElectionShowsGrantWaitersAndLockDelay(t *testing.T) {
	c := servertest.New(t, 1)
	a := newAPI(t, c, c.WaitLeader())
	lead, w1, w2 := a.session(30*time.Second, 0), a.session(30*time.Second, 0), a.session(30*time.Second, 0)
	before := time.Now()
	a.must("POST", "/v1/elections/boss/campaign", api.CampaignRequest{Session: lead, Value: "v"}, nil)
	var e api.Election
	a.must("GET", "/v1/elections/boss", nil, &e)
	if e.AcquiredAt == nil || e.AcquiredAt.Before(before.Add(-time.Minute)) || len(e.Waiters) != 0 || e.DelayUntil != nil {
		t.Fatalf("election led by %s: %+v, want acquired_at about now, no waiters, no delay", lead, e)
	}
	done := make(chan int, 2)
	for _, w := range []string{w1, w2} {
		go func() {
			st, _ := a.do("POST", "/v1/elections/boss/campaign", api.CampaignRequest{Session: w, Value: w, Wait: api.Duration(30 * time.Second)}, nil)
			done <- st
		}()
		servertest.WaitFor(t, 10*time.Second, "the campaign of "+w+" to queue", func() bool {
			e = api.Election{}
			a.must("GET", "/v1/elections/boss", nil, &e)
			return len(e.Waiters) > 0 && e.Waiters[len(e.Waiters)-1].Session == w
		})
	}
	if len(e.Waiters) != 2 || e.Waiters[0].Session != w1 || e.Waiters[1].Session != w2 || e.Waiters[0].Mode != api.ModeExclusive {
		t.Fatalf("waiters %+v, want %s then %s, exclusive", e.Waiters, w1, w2)
	}
	var l api.ElectionList
	a.must("GET", "/v1/elections", nil, &l)
	if len(l.Elections) != 1 || len(l.Elections[0].Waiters) != 2 || l.Elections[0].AcquiredAt == nil {
		t.Fatalf("election list %+v, want boss with its grant time and 2 waiters", l.Elections)
	}
	// The waiters leave the queue, the leader expires: a lock-delay.
	for _, w := range []string{w1, w2} {
		a.must("POST", "/v1/elections/boss/resign", api.SessionRequest{Session: w}, nil)
	}
	for range 2 {
		if st := <-done; st == http.StatusOK {
			t.Fatalf("a campaign that left the queue was granted")
		}
	}
	d := api.Duration(30 * time.Second)
	var short api.Session
	a.must("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(time.Second), LockDelay: &d}, &short)
	a.must("POST", "/v1/elections/short/campaign", api.CampaignRequest{Session: short.ID}, nil)
	servertest.WaitFor(t, 15*time.Second, "the leader of election short to expire", func() bool {
		e = api.Election{}
		a.must("GET", "/v1/elections/short", nil, &e)
		return e.Session == ""
	})
	if e.DelayUntil == nil || e.AcquiredAt != nil {
		t.Fatalf("election short after its leader expired: %+v, want delay_until and no acquired_at", e)
	}
}

// TestACL_ElectionWaitersShortenedForOtherTokens: a token that may read an
// election sees the ids of other tokens' sessions in its queue shortened,
// as in a lock's.
func TestACL_ElectionWaitersShortenedForOtherTokens(t *testing.T) {
	c, leader := aclCluster(t, 1)
	ac := aclClient{t: t, base: c.URL(leader)}
	admin := bearer(bootSecret)
	var reader api.Token
	ac.must(admin, "POST", "/v1/acl/tokens", api.CreateTokenRequest{Rules: []acl.Rule{{Kind: acl.Election, Access: acl.Read}}}, http.StatusCreated, &reader)
	var lead, wait api.Session
	ac.must(admin, "POST", "/v1/sessions", api.CreateSessionRequest{}, http.StatusCreated, &lead)
	ac.must(admin, "POST", "/v1/sessions", api.CreateSessionRequest{}, http.StatusCreated, &wait)
	ac.must(admin, "POST", "/v1/elections/e/campaign", api.CampaignRequest{Session: lead.ID}, http.StatusOK, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := `{"session":"` + wait.ID + `","wait":"30s"}`
		req, _ := http.NewRequest(http.MethodPost, c.URL(leader)+"/v1/elections/e/campaign", strings.NewReader(body))
		req.Header.Set("Authorization", admin)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var e api.Election
	servertest.WaitFor(t, 10*time.Second, "the campaign to queue", func() bool {
		ac.must(admin, "GET", "/v1/elections/e", nil, http.StatusOK, &e)
		return len(e.Waiters) == 1
	})
	if e.Waiters[0].Session != wait.ID {
		t.Fatalf("admin sees waiter %q, want %q", e.Waiters[0].Session, wait.ID)
	}
	ac.must(bearer(reader.Secret), "GET", "/v1/elections/e", nil, http.StatusOK, &e)
	if len(e.Waiters) != 1 || e.Waiters[0].Session == wait.ID || !strings.HasPrefix(wait.ID, strings.TrimSuffix(e.Waiters[0].Session, "…")) {
		t.Fatalf("reader sees waiters %+v, want %s shortened", e.Waiters, wait.ID)
	}
	ac.must(admin, "POST", "/v1/elections/e/resign", api.SessionRequest{Session: wait.ID}, http.StatusOK, nil)
	<-done
}
