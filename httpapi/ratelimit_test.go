package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/lockd/lockd/api"
)

// A client past its rate gets 429 too_many_requests with a Retry-After,
// changing nothing; other clients and health checks are not affected.
func TestRateLimit_PerClient(t *testing.T) {
	fake := newLeaderFake()
	s := New(Config{Service: fake, RateLimit: RateLimit{Rate: 0.5, Burst: 2}})
	send := func(remote, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for i := range 2 {
		if w := send("10.0.0.1:1000", "/v1/locks"); w.Code != 200 {
			t.Fatalf("request %d within the burst: %d", i, w.Code)
		}
	}
	calls := len(fake.Calls())
	w := send("10.0.0.1:1001", "/v1/locks") // same address, another port
	if w.Code != http.StatusTooManyRequests || codeOf(t, w) != api.CodeTooMany {
		t.Fatalf("past the burst: %d %s, want 429 too_many_requests", w.Code, w.Body)
	}
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
		t.Fatalf("Retry-After %q, want 1 or 2 seconds at 0.5 requests/s", w.Header().Get("Retry-After"))
	}
	if len(fake.Calls()) != calls {
		t.Fatal("a limited request reached the service")
	}
	if w := send("10.0.0.2:1000", "/v1/locks"); w.Code != 200 {
		t.Fatalf("another client: %d", w.Code)
	}
	if w := send("10.0.0.1:1000", "/healthz"); w.Code != 200 {
		t.Fatalf("health check of a limited client: %d", w.Code)
	}
}

func codeOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	return e.Code
}
