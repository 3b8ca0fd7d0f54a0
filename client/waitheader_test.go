package client_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// TestClient_SaysTheWaitInAHeader checks that every acquire and campaign
// the client sends carries its body's wait in the X-Lockd-Wait header too
// (a try-lock's "0s" included), so that a follower forwarding it bounds it
// without decoding the body, and that the cluster accepts them.
func TestClient_SaysTheWaitInAHeader(t *testing.T) {
	c := servertest.New(t, 1)
	node, err := url.Parse(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ path, header, body string }
	var mu sync.Mutex
	var got []seen
	proxy := httputil.NewSingleHostReverseProxy(node)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/acquire") || strings.HasSuffix(r.URL.Path, "/campaign") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var body struct {
				Wait api.Duration `json:"wait"`
			}
			_ = json.Unmarshal(b, &body)
			mu.Lock()
			got = append(got, seen{r.URL.Path, strings.Join(r.Header.Values(api.HeaderWait), ","), body.Wait.String()})
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	cl := mustClient(t, ts.URL)
	s := mustSession(t, cl)
	ctx := ctxT(t, 20*time.Second)
	m := client.NewMutex(s, "wh/m")
	if err := m.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.NewElection(s, "wh/e").Campaign(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("saw %d acquires and campaigns, want 3: %+v", len(got), got)
	}
	for _, g := range got {
		if g.header == "" || g.header != g.body {
			t.Errorf("%s: X-Lockd-Wait %q, body's wait %q; want the same, present", g.path, g.header, g.body)
		}
	}
	if got[0].header != "0s" {
		t.Errorf("the try-lock said X-Lockd-Wait %q, want 0s", got[0].header)
	}
}
