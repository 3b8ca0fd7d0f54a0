package httpapi

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
)

// TestBadInput_Answers pins the answer to each bad input of issue 25's
// section 3, with the status, the code, the message and the Allow header
// of a 405; none reaches the Service, so nothing in the state changes.
func TestBadInput_Answers(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantMsg                  string
		wantAllow                string
	}{
		// 2. A TTL of 0s is out of range, not the default; a null body is
		// no JSON object.
		{"ttl 0s", "POST", "/v1/sessions", `{"ttl":"0s"}`, 400, "ttl 0s is out of range: it must be between 1s and 24h0m0s", ""},
		{"ttl 0", "POST", "/v1/sessions", `{"ttl":"0"}`, 400, "ttl 0s is out of range", ""},
		{"null session body", "POST", "/v1/sessions", `null`, 400, "request body must be a JSON object, not null", ""},
		{"null body with blanks", "POST", "/v1/sessions", " null\n", 400, "request body must be a JSON object, not null", ""},
		{"null acquire body", "POST", "/v1/locks/a/acquire", `null`, 400, "request body must be a JSON object, not null", ""},

		// 3. Text that is not valid Unicode is refused, never rewritten
		// to U+FFFD.
		{"session name not UTF-8", "POST", "/v1/sessions", "{\"name\":\"a\xffb\"}", 400, "request body is not valid UTF-8: the byte 0xff at byte 10", ""},
		{"session name cut in a character", "POST", "/v1/sessions", "{\"name\":\"\xc3\"}", 400, "request body is not valid UTF-8: the byte 0xc3 at byte 9", ""},
		{"session name with a lone surrogate", "POST", "/v1/sessions", `{"name":"a\udc00"}`, 400,
			`request body has the escape \udc00 at byte 10, half of a UTF-16 surrogate pair without the other half: it is no character`, ""},
		{"session name with a high surrogate alone", "POST", "/v1/sessions", `{"name":"\ud83d!"}`, 400, `the escape \ud83d at byte 9`, ""},
		{"election value not UTF-8", "POST", "/v1/elections/e/campaign", "{\"session\":\"s1\",\"value\":\"\xfe\"}", 400, "the byte 0xfe at byte 25", ""},
		{"member id not UTF-8", "POST", "/v1/cluster/members", "{\"id\":\"n\x80\"}", 400, "the byte 0x80 at byte 8", ""},
		{"lock name not UTF-8", "GET", "/v1/locks/a%FFb", "", 400,
			`name "a\xffb" has the byte 0xff at byte 1, which is not UTF-8; allowed are A-Z a-z 0-9 . _ / -`, ""},
		{"election name not UTF-8", "POST", "/v1/elections/%C3/campaign", `{"session":"s1"}`, 400, "has the byte 0xc3 at byte 0, which is not UTF-8", ""},

		// 4. A character outside the name's alphabet is shown as itself.
		{"lock name with ö", "GET", "/v1/locks/a%C3%B6b", "", 400,
			`name "aöb" has the character 'ö' at byte 1; allowed are A-Z a-z 0-9 . _ / -`, ""},
		{"election name with a Chinese character", "POST", "/v1/elections/%E9%94%81/campaign", `{"session":"s1"}`, 400, `has the character '锁' at byte 0`, ""},

		// 5. Token 0 is not "absent".
		{"check, token 0", "POST", "/v1/locks/a/check", `{"token":0}`, 400,
			"token must be a positive integer, not 0: a fencing token is the index of a Raft entry, and the first is 1", ""},
		{"check, no token", "POST", "/v1/locks/a/check", `{}`, 400, "token is required", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			e := mustErrorBody(t, rec)
			if e.Code != wire.CodeBadRequest || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("body = %+v, want code bad_request and a message containing %q", e, tt.wantMsg)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if calls := svc.Calls(); len(calls) != 0 {
				t.Errorf("bad input reached the Service: %v", calls)
			}
		})
	}
}

// TestBadInput_StillServed pins what the changes of issue 25's section 3
// leave working: names that end in a verb of the other kind or are only a
// verb, the lock or election an older version let end in a verb (read with
// %2F, released, checked, resigned, proclaimed), a TTL given as null, a
// valid surrogate pair, every query parameter a route takes, and the
// health checks, which ignore parameters.
func TestBadInput_StillServed(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantCall                 call // Method "" for none
	}{
		{"ttl null is the default", "POST", "/v1/sessions", `{"ttl":null,"lock_delay":null}`, 201,
			call{"CreateSession", []any{wire.CreateSessionRequest{TTL: dur(wire.DefaultTTL), LockDelay: durPtr(wire.DefaultLockDelay)}}}},
		{"ttl 1s", "POST", "/v1/sessions", `{"ttl":"1s"}`, 201,
			call{"CreateSession", []any{wire.CreateSessionRequest{TTL: dur(time.Second), LockDelay: durPtr(wire.DefaultLockDelay)}}}},
		{"surrogate pair", "POST", "/v1/sessions", `{"name":"\ud83d\udd12 ö \\udc00"}`, 201,
			call{"CreateSession", []any{wire.CreateSessionRequest{TTL: dur(wire.DefaultTTL), LockDelay: durPtr(wire.DefaultLockDelay), Name: "🔒 ö \\udc00"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			calls := svc.Calls()
			if tt.wantCall.Method == "" {
				if len(calls) != 0 {
					t.Errorf("calls = %v, want none", calls)
				}
				return
			}
			if len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.wantCall) {
				t.Errorf("calls = %#v\nwant [%#v]", calls, tt.wantCall)
			}
		})
	}
}
