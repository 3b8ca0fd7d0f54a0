package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// TestServer_RemovedNodeServesNothing: once the node knows it was removed,
// every route but /healthz answers 410 removed, before forwarding or
// calling the service.
func TestServer_RemovedNodeServesNothing(t *testing.T) {
	f := &fakeService{leaderHTTP: "http://127.0.0.1:1"}
	f.removal = api.Errorf(api.CodeRemoved, "node n4 was removed")
	s := mustNewServer(t, f, nil)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/locks", ""},
		{"GET", "/v1/cluster", ""},
		{"POST", "/v1/sessions", `{}`},
		{"POST", "/v1/cluster/leader-transfer", ""},
	} {
		rec := serve(s, r.method, r.path, r.body)
		var e api.Error
		_ = json.Unmarshal(rec.Body.Bytes(), &e) // a body that does not decode leaves Code empty: reported below
		if rec.Code != http.StatusGone || e.Code != api.CodeRemoved {
			t.Errorf("%s %s = %d %s, want 410 removed", r.method, r.path, rec.Code, rec.Body)
		}
	}
	if rec := serve(s, "GET", "/healthz", ""); rec.Code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", rec.Code)
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Errorf("a removed node called its service: %v", calls)
	}
}

// TestServer_LeaderTransfer: the body is optional and strict, and "to"
// reaches the service.
func TestServer_LeaderTransfer(t *testing.T) {
	f := newLeaderFake()
	s := mustNewServer(t, f, nil)
	for _, tt := range []struct {
		body, to string
		status   int
	}{
		{"", "n2", 200},
		{`{}`, "n2", 200},
		{`{"to":"n3"}`, "n3", 200},
		{`{"to":"n3","x":1}`, "", 400},
		{`{"to":3}`, "", 400},
	} {
		rec := serve(s, "POST", "/v1/cluster/leader-transfer", tt.body)
		if rec.Code != tt.status {
			t.Errorf("body %q: %d %s, want %d", tt.body, rec.Code, rec.Body, tt.status)
			continue
		}
		var res api.TransferResponse
		if tt.status == 200 && (json.Unmarshal(rec.Body.Bytes(), &res) != nil || res.Leader.ID != tt.to || res.From != "n1") {
			t.Errorf("body %q: answered %s, want from n1 to %s", tt.body, rec.Body, tt.to)
		}
	}
}

// TestForward_TransferWaitsAcrossLeaderChange: a follower that forwarded
// a leadership transfer relays the old leader's answer even though it
// learns of the new leader before that answer comes, where any other
// request would be cut short with 504.
func TestForward_TransferWaitsAcrossLeaderChange(t *testing.T) {
	p := mustNewPair(t)
	reached := make(chan struct{}, 1)
	p.leader.onCall = func(ctx context.Context) error {
		reached <- struct{}{}
		time.Sleep(6 * leaderWatchInterval)
		return nil
	}
	go func() {
		<-reached
		p.follower.setLeader(false, "http://127.0.0.1:1") // the new leader, as the follower hears of it
	}()
	status, _, body := do(t, "POST", p.followerURL+"/v1/cluster/leader-transfer", `{"to":"n3"}`, nil)
	if status != http.StatusOK || !strings.Contains(body, `"id":"n3"`) {
		t.Fatalf("forwarded transfer = %d %s, want the old leader's 200", status, body)
	}
}
