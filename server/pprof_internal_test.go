package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// withPprof serves the profiles under /debug/pprof/ and leaves every
// other path to the API.
func TestWithPprof(t *testing.T) {
	nodeAPI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := withPprof(nodeAPI)
	for path, want := range map[string]int{
		"/debug/pprof/":        http.StatusOK,
		"/debug/pprof/cmdline": http.StatusOK,
		"/v1/cluster":          http.StatusTeapot,
		"/debug/other":         http.StatusTeapot,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, want)
		}
	}
}
