package httpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

var errPlain = errors.New("lease: bbolt: disk on fire at /var/lib/lockd")

// TestErrors_CodeToStatus checks every wire code's status, body and
// Retry-After, on a route that reaches the Service.
func TestErrors_CodeToStatus(t *testing.T) {
	tests := []struct {
		code       string
		retryAfter time.Duration
		wantStatus int
		wantRetry  string
	}{
		{api.CodeBadRequest, 0, 400, ""},
		{api.CodeUnauthorized, 0, 401, ""},
		{api.CodeForbidden, 0, 403, ""},
		{api.CodeNotFound, 0, 404, ""},
		{api.CodeLockHeld, 0, 409, ""},
		{api.CodeNotHolder, 0, 409, ""},
		{api.CodeLockDelay, 0, 409, "1"},
		{api.CodeLockDelay, 3 * time.Second, 409, "3"},
		{api.CodeLockDelay, 2500 * time.Millisecond, 409, "3"},
		{api.CodeLockDelay, time.Millisecond, 409, "1"},
		{api.CodeSessionExpired, 0, 410, ""},
		{api.CodeTooLarge, 0, 413, ""},
		{api.CodeTooMany, 0, 429, "1"},
		{api.CodeTooMany, 2 * time.Second, 429, "2"},
		{api.CodeNoLeader, 0, 503, "1"},
		{api.CodeNoLeader, 4 * time.Second, 503, "4"},
		{api.CodeTimeout, 0, 504, ""},
		{api.CodeInternal, 0, 500, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.code, tt.retryAfter), func(t *testing.T) {
			msg := "the sentence for " + tt.code
			svc := newLeaderFake()
			svc.err = &api.Error{Code: tt.code, Message: msg, RetryAfter: tt.retryAfter}
			rec := serve(mustNewServer(t, svc, nil), "POST", "/v1/locks/a/acquire", `{"session":"s1"}`)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
			}
			e := mustErrorBody(t, rec)
			if e.Code != tt.code || e.Message != msg {
				t.Errorf("body = %+v, want code %q and message %q", e, tt.code, msg)
			}
		})
	}
}

// TestErrors_NotWireError checks that errors the Service did not mean for
// the client are answered 500 internal without their text, and that wrapped
// wire errors keep their code.
func TestErrors_NotWireError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{"plain error", errPlain, 500, api.CodeInternal, internalMessage},
		{"context error", context.DeadlineExceeded, 500, api.CodeInternal, internalMessage},
		{"unknown code", &api.Error{Code: "weird", Message: "secret"}, 500, api.CodeInternal, internalMessage},
		{"wrapped wire error", fmt.Errorf("lease: acquire: %w", api.Errorf(api.CodeLockHeld, "lock a is held")), 409, api.CodeLockHeld, "lock a is held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			svc.err = tt.err
			rec := serve(mustNewServer(t, svc, nil), "GET", "/v1/locks/a", "")
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if e := mustErrorBody(t, rec); e.Code != tt.wantCode || e.Message != tt.wantMsg {
				t.Errorf("body = %+v, want code %q message %q", e, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// TestRouter_UnknownPathAndMethod checks the JSON 404 and 405 answers and
// the Allow header.
func TestRouter_UnknownPathAndMethod(t *testing.T) {
	tests := []struct {
		method, path string
		wantStatus   int
		wantCode     string
		wantAllow    string
	}{
		{"GET", "/", 404, api.CodeNotFound, ""},
		{"GET", "/v2/locks", 404, api.CodeNotFound, ""},
		{"GET", "/metrics", 404, api.CodeNotFound, ""},
		{"GET", "/v1/sessions/", 404, api.CodeNotFound, ""},
		{"POST", "/v1/locks/a/b/steal", 405, api.CodeBadRequest, "GET"},
		{"PUT", "/v1/sessions", 405, api.CodeBadRequest, "GET, POST"},
		{"GET", "/v1/sessions/s1/keepalive", 405, api.CodeBadRequest, "POST"},
		{"DELETE", "/v1/locks/a/acquire", 405, api.CodeBadRequest, "POST"},
		{"DELETE", "/v1/locks/a%2Facquire", 405, api.CodeBadRequest, "GET"},
		{"GET", "/v1/locks/a/acquire", 405, api.CodeBadRequest, "POST"},
		{"GET", "/v1/elections/e/resign", 405, api.CodeBadRequest, "POST"},
		{"POST", "/v1/cluster", 405, api.CodeBadRequest, "GET"},
		{"POST", "/healthz", 405, api.CodeBadRequest, "GET"},
		{"DELETE", "/readyz", 405, api.CodeBadRequest, "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, "")
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if e := mustErrorBody(t, rec); e.Code != tt.wantCode || e.Message == "" {
				t.Errorf("body = %+v, want code %q and a message", e, tt.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if calls := svc.Calls(); len(calls) != 0 {
				t.Errorf("calls = %v, want none", calls)
			}
		})
	}
}

// TestRetryAfter_Rounding checks the Retry-After arithmetic directly.
func TestRetryAfter_Rounding(t *testing.T) {
	tests := []struct {
		code string
		d    time.Duration
		want int
	}{
		{api.CodeNoLeader, 0, 1},
		{api.CodeNoLeader, -time.Second, 1},
		{api.CodeLockDelay, 999 * time.Millisecond, 1},
		{api.CodeLockDelay, time.Second, 1},
		{api.CodeLockDelay, time.Second + time.Nanosecond, 2},
		{api.CodeTimeout, 0, 0},
		{api.CodeTimeout, 1500 * time.Millisecond, 2},
	}
	for _, tt := range tests {
		if got := retryAfter(&api.Error{Code: tt.code, RetryAfter: tt.d}); got != tt.want {
			t.Errorf("retryAfter(%s, %v) = %d, want %d", tt.code, tt.d, got, tt.want)
		}
	}
}
