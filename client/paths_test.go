package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
)

// TestClient_ReadsNamesEndingInAVerb checks that the client reads a lock or
// election whose name ends in a verb of its kind, which only an older
// server let a client create, with the '/' before the verb written %2F
// (a GET of .../x/acquire is the wrong method on the acquire route), and
// every other name as it is.
func TestClient_ReadsNamesEndingInAVerb(t *testing.T) {
	var mu sync.Mutex
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(ts.Close)
	c := mustClient(t, ts.URL)
	ctx := ctxT(t, 10*time.Second)
	for _, name := range []string{"x/acquire", "a/b/check", "acquire", "x/campaign"} {
		if _, err := c.Lock(ctx, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"e1/campaign", "e/resign", "e/acquire"} {
		if _, err := c.Election(ctx, name); !errors.Is(err, client.ErrNoElectionLeader) {
			t.Fatalf("Election(%q): %v, want ErrNoElectionLeader from the empty answer", name, err)
		}
	}
	want := []string{
		"/v1/locks/x%2Facquire", "/v1/locks/a/b%2Fcheck", "/v1/locks/acquire", "/v1/locks/x/campaign",
		"/v1/elections/e1%2Fcampaign", "/v1/elections/e%2Fresign", "/v1/elections/e/acquire",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %q, want %q", i, got[i], want[i])
		}
	}
}
