package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/servertest"
)

// TestBadInput_OnACluster runs the bad inputs of issue 25's section 3
// that touch state against a real cluster, through a follower (whose
// requests the leader gets over the peer port) and the leader: a lock or
// election name that ends in a verb is refused and nothing is created; one
// that an older version created is read with %2F, checked and let go of;
// a TTL of 0s creates no session; an unknown query parameter is refused
// by the node asked; net/http's 431 is JSON on the API port.
func TestBadInput_OnACluster(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	fol := c.Follower(leader)
	l, f := newAPI(t, c, leader), newAPI(t, c, fol)
	s := l.session(20*time.Second, 0)
	refused := func(a *nodeAPI, method, path string, in any, wantStatus int, wantMsg string) {
		t.Helper()
		st, e := a.do(method, path, in, nil)
		if st != wantStatus || e.Code != api.CodeBadRequest || !strings.Contains(e.Message, wantMsg) {
			t.Errorf("%s %s: %d %s %q, want %d bad_request containing %q", method, path, st, e.Code, e.Message, wantStatus, wantMsg)
		}
	}
	empty := func(what string) {
		t.Helper()
		var locks api.LockList
		var elections api.ElectionList
		l.must("GET", "/v1/locks?consistent", nil, &locks)
		l.must("GET", "/v1/elections?consistent", nil, &elections)
		if len(locks.Locks) != 0 || len(elections.Elections) != 0 {
			t.Fatalf("%s: locks %+v, elections %+v, want none", what, locks.Locks, elections.Elections)
		}
	}

	refused(f, "POST", "/v1/locks/x/acquire/acquire", api.AcquireRequest{Session: s}, 400, `lock name "x/acquire" ends in "/acquire"`)
	refused(f, "POST", "/v1/elections/e1/campaign/campaign", api.CampaignRequest{Session: s}, 400, `election name "e1/campaign" ends in "/campaign"`)
	refused(f, "GET", "/v1/locks/x/acquire", nil, 405, "use POST")
	refused(l, "GET", "/v1/elections/e1/campaign", nil, 405, "use POST")
	empty("after the refused acquire and campaign")

	// A lock and an election named so by an older version, made through
	// the node as that version's API made them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node := c.Nodes[leader].Node()
	got, err := node.Acquire(ctx, "x/acquire", api.AcquireRequest{Session: s, Mode: api.ModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Campaign(ctx, "e1/campaign", api.CampaignRequest{Session: s, Value: "v"}); err != nil {
		t.Fatal(err)
	}
	refused(f, "GET", "/v1/locks/x/acquire", nil, 405, "GET /v1/locks/x%2Facquire")
	for _, a := range []*nodeAPI{f, l} {
		var lk api.Lock
		a.must("GET", "/v1/locks/x%2Facquire", nil, &lk)
		if lk.Name != "x/acquire" || len(lk.Holders) != 1 || lk.Holders[0].Token != got.Token {
			t.Errorf("%s: read of x/acquire with %%2F = %+v, want its holder with token %d", a.base, lk, got.Token)
		}
		var e api.Election
		a.must("GET", "/v1/elections/e1%2Fcampaign", nil, &e)
		if e.Name != "e1/campaign" || e.Session != s {
			t.Errorf("%s: read of e1/campaign with %%2F = %+v, want led by %s", a.base, e, s)
		}
	}
	var valid api.CheckResponse
	f.must("POST", "/v1/locks/x/acquire/check", api.CheckRequest{Token: got.Token}, &valid)
	if !valid.Valid {
		t.Errorf("check of x/acquire's token: invalid")
	}
	f.must("POST", "/v1/locks/x/acquire/release", api.SessionRequest{Session: s}, nil)
	f.must("POST", "/v1/elections/e1/campaign/resign", api.SessionRequest{Session: s}, nil)
	empty("after the old lock and election were let go of")

	// A TTL of 0s, a null body, a misspelt parameter: refused, nothing
	// created.
	var before, after api.SessionList
	l.must("GET", "/v1/sessions?consistent", nil, &before)
	refused(f, "POST", "/v1/sessions", map[string]string{"ttl": "0s"}, 400, "ttl 0s is out of range: it must be between 1s and 24h0m0s")
	refused(f, "POST", "/v1/sessions", json.RawMessage("null"), 400, "request body must be a JSON object, not null")
	refused(f, "GET", "/v1/locks/x?stael", nil, 400, `unknown query parameter "stael"`)
	refused(f, "POST", "/v1/locks/x/check", api.CheckRequest{}, 400, "token must be a positive integer, not 0")
	l.must("GET", "/v1/sessions?consistent", nil, &after)
	if len(after.Sessions) != len(before.Sessions) {
		t.Errorf("sessions %d before the refused creates, %d after", len(before.Sessions), len(after.Sessions))
	}

	// net/http's own 431, on the API port, as JSON.
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.URL(fol), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET /v1/cluster HTTP/1.1\r\nHost: lockd\r\nX-Big: "+strings.Repeat("x", 80<<10)+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge ||
		e.Code != api.CodeTooLarge || e.Message != "the request line and headers are larger than the limit of 65536 bytes" {
		t.Errorf("huge headers: %s %+v (%v), want 431 too_large naming the limit", resp.Status, e, err)
	}
}
