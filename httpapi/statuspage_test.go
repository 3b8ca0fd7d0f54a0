package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/httpapi/ui"
)

// TestStatusPage_Files checks the routes of the status page: the redirect,
// each file with its type and the Content-Security-Policy, and that what
// names no file is answered like any unknown path.
func TestStatusPage_Files(t *testing.T) {
	s := mustNewServer(t, newLeaderFake(), nil)
	rec := serve(s, http.MethodGet, "/ui", "")
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("GET /ui: %d Location %q, want 301 to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js" defer></script>`},
		{"/ui/index.html", "text/html", `<meta name="viewport"`},
		{"/ui/app.js", "text/javascript", "/v1/locks"},
		{"/ui/style.css", "text/css", "@media (max-width"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	} {
		rec := serve(s, http.MethodGet, tc.path, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tc.path, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.ctype)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); csp != ui.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
		if !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
	}
	if rec := serve(s, http.MethodHead, "/ui/", ""); rec.Code != http.StatusOK {
		t.Errorf("HEAD /ui/: %d", rec.Code)
	}

	rec = serve(s, http.MethodGet, "/ui/nope.js", "")
	if rec.Code != http.StatusNotFound || mustErrorBody(t, rec).Code != api.CodeNotFound {
		t.Errorf("GET /ui/nope.js: %d %s, want 404 not_found", rec.Code, rec.Body)
	}
	rec = serve(s, http.MethodPost, "/ui/", "")
	if rec.Code != http.StatusMethodNotAllowed || mustErrorBody(t, rec).Code != api.CodeBadRequest || rec.Header().Get("Allow") != "GET" {
		t.Errorf("POST /ui/: %d Allow %q %s, want 405 bad_request, Allow GET", rec.Code, rec.Header().Get("Allow"), rec.Body)
	}
}

// A browser that has the page asks again with If-None-Match and is told
// it has the current version.
func TestStatusPage_Revalidates(t *testing.T) {
	s := mustNewServer(t, newLeaderFake(), nil)
	first := serve(s, http.MethodGet, "/ui/app.js", "")
	etag := first.Header().Get("ETag")
	if etag == "" || first.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: want an ETag and no-cache", etag, first.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest(http.MethodGet, "/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match with the current ETag: %d, want 304", rec.Code)
	}
}

// With ACLs on, the page's files need no token (the page asks for one);
// the API behind them still does.
func TestStatusPage_PublicWithACLs(t *testing.T) {
	cfg := testConfig(t, newLeaderFake())
	cfg.ACL = noTokens{}
	s := New(cfg)
	if rec := serve(s, http.MethodGet, "/ui/", ""); rec.Code != http.StatusOK {
		t.Fatalf("GET /ui/ without a token: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(s, http.MethodGet, "/v1/locks", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/locks without a token: %d, want 401", rec.Code)
	}
}

// noTokens is an ACLService that knows no token.
type noTokens struct{}

func (noTokens) ResolveToken(string) (acl.Token, bool)         { return acl.Token{}, false }
func (noTokens) SessionOwner(string) (string, bool)            { return "", false }
func (noTokens) RevokeToken(context.Context, string) error     { return nil }
func (noTokens) Tokens(context.Context) (api.TokenList, error) { return api.TokenList{}, nil }
func (noTokens) KeyUsage(string) *api.KeyUsage                 { return nil }
func (noTokens) CreateToken(context.Context, api.CreateTokenRequest) (api.Token, error) {
	return api.Token{}, nil
}
