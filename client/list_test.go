package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// pagingServer serves GET /v1/sessions from ids in pages of at most
// pageSize, whatever limit the client asks for, as a server with a smaller
// maximum would; next, when set, replaces the cursor it answers.
func pagingServer(t *testing.T, ids []string, pageSize int, next func(string) string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var afters []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/sessions" {
			http.NotFound(w, r)
			return
		}
		after := r.URL.Query().Get("after")
		if limit, err := strconv.Atoi(r.URL.Query().Get("limit")); err != nil || limit < 1 {
			t.Errorf("request without a good limit: %s", r.URL)
		}
		mu.Lock()
		afters = append(afters, after)
		mu.Unlock()
		var l api.SessionList
		for _, id := range ids {
			if id > after && len(l.Sessions) < pageSize {
				l.Sessions = append(l.Sessions, api.Session{ID: id})
			}
		}
		if n := len(l.Sessions); n > 0 && l.Sessions[n-1].ID != ids[len(ids)-1] {
			l.Next = l.Sessions[n-1].ID
			if next != nil {
				l.Next = next(l.Next)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(l)
	}))
	t.Cleanup(srv.Close)
	return srv, &afters
}

func TestClient_ListsFollowTheCursor(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	srv, afters := pagingServer(t, ids, 2, nil)
	got, err := mustClient(t, srv.URL).Sessions(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, s := range got {
		gotIDs = append(gotIDs, s.ID)
	}
	if !slices.Equal(gotIDs, ids) || !slices.Equal(*afters, []string{"", "b", "d"}) {
		t.Fatalf("sessions %v after reading pages after %q", gotIDs, *afters)
	}
}

func TestClient_ListRefusesACursorThatDoesNotMoveOn(t *testing.T) {
	srv, afters := pagingServer(t, []string{"a", "b", "c"}, 1, func(string) string { return "a" })
	_, err := mustClient(t, srv.URL).Sessions(ctxT(t, 10*time.Second))
	if err == nil || !strings.Contains(err.Error(), "does not follow") || len(*afters) != 2 {
		t.Fatalf("err %v after %d pages", err, len(*afters))
	}
}

// Against a real node: the lists hold what was created, elections included.
func TestClient_ListsSessionsLocksAndElections(t *testing.T) {
	c := servertest.New(t, 1)
	cl := mustClient(t, c.URLs()...)
	ctx := ctxT(t, 20*time.Second)
	s := mustSession(t, cl)
	m := client.NewMutex(s, "jobs/a")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	e := client.NewElection(s, "leader/x")
	if err := e.Campaign(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	ss, err := cl.Sessions(ctx)
	if err != nil || len(ss) != 1 || ss[0].ID != s.ID() || !slices.Equal(ss[0].Locks, []string{"jobs/a"}) {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	ls, err := cl.Locks(ctx)
	if err != nil || len(ls) != 1 || ls[0].Name != "jobs/a" || ls[0].Holders[0].Token != m.Token() {
		t.Fatalf("locks %+v %v", ls, err)
	}
	es, err := cl.Elections(ctx)
	if err != nil || len(es) != 1 || es[0].Name != "leader/x" || es[0].Session != s.ID() || es[0].Value != "v1" {
		t.Fatalf("elections %+v %v", es, err)
	}
}
