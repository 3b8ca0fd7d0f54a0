package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
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
		// 1. A GET of a path that ends in a verb is the wrong method on the
		// verb's route, never a read of a name that ends in the verb; such
		// a name cannot be created.
		{"GET of acquire", "GET", "/v1/locks/x/acquire", "", 405,
			`method GET is not allowed on /v1/locks/x/acquire; use POST. No lock name may end in "/acquire"; to read one named so by an older version, write its last slash as %2F: GET /v1/locks/x%2Facquire`, "POST"},
		{"GET of release", "GET", "/v1/locks/a/b/release", "", 405, "GET /v1/locks/a/b%2Frelease", "POST"},
		{"GET of check", "GET", "/v1/locks/x/check?stale", "", 405, `No lock name may end in "/check"`, "POST"},
		{"GET of campaign", "GET", "/v1/elections/e1/campaign", "", 405,
			`method GET is not allowed on /v1/elections/e1/campaign; use POST. No election name may end in "/campaign"; to read one named so by an older version, write its last slash as %2F: GET /v1/elections/e1%2Fcampaign`, "POST"},
		{"GET of proclaim", "GET", "/v1/elections/e1/proclaim", "", 405, `No election name may end in "/proclaim"`, "POST"},
		{"GET of resign", "GET", "/v1/elections/e1/resign", "", 405, `No election name may end in "/resign"`, "POST"},
		{"GET of a verb spelt with an escape", "GET", "/v1/locks/x/%61cquire", "", 405, "use POST", "POST"},
		{"acquire of a name ending in a verb", "POST", "/v1/locks/x/acquire/acquire", `{"session":"s1"}`, 400,
			`lock name "x/acquire" ends in "/acquire": the last segment of a lock name may not be acquire, release or check, which the API's paths use`, ""},
		{"acquire of a name ending in check", "POST", "/v1/locks/x/check/acquire", `{"session":"s1"}`, 400, `lock name "x/check" ends in "/check"`, ""},
		{"acquire of a name written with %2F", "POST", "/v1/locks/x%2Frelease/acquire", `{"session":"s1"}`, 400, `lock name "x/release" ends in "/release"`, ""},
		{"campaign of a name ending in a verb", "POST", "/v1/elections/e1/campaign/campaign", `{"session":"s1"}`, 400,
			`election name "e1/campaign" ends in "/campaign": the last segment of an election name may not be campaign, proclaim or resign, which the API's paths use`, ""},
		{"campaign of a name ending in resign", "POST", "/v1/elections/e1/resign/campaign", `{"session":"s1"}`, 400, `election name "e1/resign" ends in "/resign"`, ""},

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

		// 7. Unknown query parameters are refused, as unknown body fields
		// are.
		{"misspelt stale", "GET", "/v1/locks/a?stael", "", 400,
			`unknown query parameter "stael": GET /v1/locks/{name} takes only index, wait, stale, consistent`, ""},
		{"list parameter on a read", "GET", "/v1/elections/e?limit=5", "", 400, `unknown query parameter "limit": GET /v1/elections/{name} takes only`, ""},
		{"unknown list parameter", "GET", "/v1/sessions?limit=1&prefix=a", "", 400,
			`unknown query parameter "prefix": GET /v1/sessions takes only index, wait, stale, consistent, limit, after`, ""},
		{"the first unknown one is named", "GET", "/v1/locks?zeta=1&alpha=2&stale", "", 400, `unknown query parameter "alpha"`, ""},
		{"parameter on a write", "POST", "/v1/locks/a/acquire?wait=5s", `{"session":"s1"}`, 400,
			`unknown query parameter "wait": POST /v1/locks/{name}/acquire takes no query parameters`, ""},
		{"parameter on a session create", "POST", "/v1/sessions?ttl=5s", "", 400, `unknown query parameter "ttl": POST /v1/sessions takes no query parameters`, ""},
		{"parameter on a keepalive", "POST", "/v1/sessions/s1/keepalive?x", "", 400, `unknown query parameter "x"`, ""},
		{"keepalive of no sessions", "POST", "/v1/sessions/keepalive", `{"ids":[]}`, 400, "ids has 0 sessions: give 1 to 1000", ""},
		{"keepalive without a body", "POST", "/v1/sessions/keepalive", "", 400, "", ""},
		{"keepalive of too many sessions", "POST", "/v1/sessions/keepalive", `{"ids":[` + strings.Repeat(`"s",`, 1000) + `"s"]}`, 400, "ids has 1001 sessions", ""},
		{"keepalive of an empty id", "POST", "/v1/sessions/keepalive", `{"ids":["s1",""]}`, 400, "ids[1] is 0 bytes long", ""},
		{"keepalive ids not strings", "POST", "/v1/sessions/keepalive", `{"ids":[1]}`, 400, "", ""},
		{"keepalive of sessions with a query", "POST", "/v1/sessions/keepalive?x", `{"ids":["s1"]}`, 400, `unknown query parameter "x"`, ""},
		{"parameter on the cluster", "GET", "/v1/cluster?stale", "", 400, `unknown query parameter "stale": GET /v1/cluster takes no query parameters`, ""},
		{"malformed query", "GET", "/v1/locks/a?stale&%zz", "", 400, `malformed query string "stale&%zz"`, ""},
		{"semicolon in the query", "GET", "/v1/locks?limit=1;after=a", "", 400, "malformed query string", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newLeaderFake()
			rec := serve(mustNewServer(t, svc, nil), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			e := mustErrorBody(t, rec)
			if e.Code != api.CodeBadRequest || !strings.Contains(e.Message, tt.wantMsg) {
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
		{"lock named only a verb", "GET", "/v1/locks/acquire", "", 200, call{"Lock", []any{"acquire", ReadOptions{}}}},
		{"acquire of a lock named only a verb", "POST", "/v1/locks/check/acquire", `{"session":"s1"}`, 200,
			call{"Acquire", []any{"check", api.AcquireRequest{Session: "s1", Mode: api.ModeExclusive}}}},
		{"lock named with an election verb", "POST", "/v1/locks/x/campaign/acquire", `{"session":"s1"}`, 200,
			call{"Acquire", []any{"x/campaign", api.AcquireRequest{Session: "s1", Mode: api.ModeExclusive}}}},
		{"read of an election named with a lock verb", "GET", "/v1/elections/e/acquire", "", 200, call{"Election", []any{"e/acquire", ReadOptions{}}}},
		{"verb inside a name", "GET", "/v1/locks/acquire/x?stale", "", 200, call{"Lock", []any{"acquire/x", ReadOptions{Stale: true}}}},
		{"old lock read with %2F", "GET", "/v1/locks/x%2Facquire?index=3&wait=1s", "", 200,
			call{"Lock", []any{"x/acquire", ReadOptions{Index: 3, Wait: time.Second}}}},
		{"old lock read with %2f", "GET", "/v1/locks/a/b%2fcheck", "", 200, call{"Lock", []any{"a/b/check", ReadOptions{}}}},
		{"old lock released", "POST", "/v1/locks/x/acquire/release", `{"session":"s1"}`, 200,
			call{"Release", []any{"x/acquire", api.SessionRequest{Session: "s1"}}}},
		{"old lock checked", "POST", "/v1/locks/x/acquire/check", `{"token":7}`, 200, call{"Check", []any{"x/acquire", uint64(7)}}},
		{"old election read with %2F", "GET", "/v1/elections/e1%2Fcampaign", "", 200, call{"Election", []any{"e1/campaign", ReadOptions{}}}},
		{"old election proclaimed", "POST", "/v1/elections/e1/campaign/proclaim", `{"session":"s1","value":"v"}`, 200,
			call{"Proclaim", []any{"e1/campaign", api.ProclaimRequest{Session: "s1", Value: "v"}}}},
		{"old election resigned", "POST", "/v1/elections/e1/campaign/resign", `{"session":"s1"}`, 200,
			call{"Resign", []any{"e1/campaign", api.SessionRequest{Session: "s1"}}}},
		{"ttl null is the default", "POST", "/v1/sessions", `{"ttl":null,"lock_delay":null}`, 201,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(api.DefaultTTL), LockDelay: durPtr(api.DefaultLockDelay)}}}},
		{"ttl 1s", "POST", "/v1/sessions", `{"ttl":"1s"}`, 201,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(time.Second), LockDelay: durPtr(api.DefaultLockDelay)}}}},
		{"surrogate pair", "POST", "/v1/sessions", `{"name":"\ud83d\udd12 ö \\udc00"}`, 201,
			call{"CreateSession", []any{api.CreateSessionRequest{TTL: dur(api.DefaultTTL), LockDelay: durPtr(api.DefaultLockDelay), Name: "🔒 ö \\udc00"}}}},
		{"every list parameter", "GET", "/v1/elections?index=1&wait=1s&stale=false&consistent&limit=5&after=a", "", 200,
			call{"Elections", []any{list(ReadOptions{Index: 1, Wait: time.Second, Consistent: true}, 5, "a")}}},
		{"every read parameter", "GET", "/v1/sessions/s1?index=1&wait=1s&stale", "", 200,
			call{"Session", []any{"s1", ReadOptions{Index: 1, Wait: time.Second, Stale: true}}}},
		{"health check ignores parameters", "GET", "/healthz?verbose&x=%zz", "", 200, call{}},
		{"readiness check ignores parameters", "GET", "/readyz?verbose", "", 200, call{"Ready", nil}},
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

// TestBadInput_VerbsAreTheRoutes checks that api.LockVerbs and
// api.ElectionVerbs are exactly the final segments of the POST routes on
// one lock or election, so that a verb added to the routing table is
// reserved in names too.
func TestBadInput_VerbsAreTheRoutes(t *testing.T) {
	got := map[string][]string{}
	s := mustNewServer(t, newLeaderFake(), nil)
	for _, rt := range s.routes() {
		for get := range verbRoutes {
			if verb, ok := strings.CutPrefix(rt.path, get+"/"); ok && rt.method == http.MethodPost {
				got[get] = append(got[get], verb)
			}
		}
	}
	want := map[string][]string{"/v1/locks/{name:.*}": api.LockVerbs, "/v1/elections/{name:.*}": api.ElectionVerbs}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verbs of the routing table = %v, want %v", got, want)
	}
}
