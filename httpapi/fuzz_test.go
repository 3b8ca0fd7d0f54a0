package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// The fuzz targets of request decoding. `go test` runs each on its seeds
// (the f.Add calls and testdata/fuzz/<target>); docs/harness.md,
// "Fuzzing", says how to fuzz one.

// Bounds of a FuzzRequestDecoding input: larger parts are skipped, so that
// an execution stays short. A body over api.MaxBody is still reached, by
// the padding mode bit.
const (
	fuzzMaxMethod = 16
	fuzzMaxTarget = 1024
	fuzzMaxBody   = 8 << 10
)

// Mode bits of a FuzzRequestDecoding input. The low two bits pick the
// node the request reaches; the bits above them, in serviceFails, the error
// the Service answers with.
const (
	fuzzLeader        = 0 // the leader; every Service call succeeds
	fuzzServiceFails  = 1 // the leader; every Service call fails
	fuzzNoLeader      = 2 // a follower that knows no leader
	fuzzBadLeaderAddr = 3 // a follower whose leader's address is unusable

	fuzzDebugRoutes = 0x40 // the fault and clock routes are on
	fuzzPadBody     = 0x80 // the body is padded past api.MaxBody
)

// fuzzErrors are the errors the Service answers with in fuzzServiceFails
// mode: one of each documented code, some with a Retry-After, and two that
// are no *api.Error the client may see.
var fuzzErrors = []error{
	api.Errorf(api.CodeBadRequest, "bad"),
	api.Errorf(api.CodeNotFound, "no member"),
	api.Errorf(api.CodeLockHeld, "held"),
	api.Errorf(api.CodeNotHolder, "not holder"),
	&api.Error{Code: api.CodeLockDelay, Message: "delay", RetryAfter: 2500 * time.Millisecond},
	api.Errorf(api.CodeRepeated, "repeated"),
	api.Errorf(api.CodeSessionExpired, "expired"),
	api.Errorf(api.CodeTooLarge, "large"),
	&api.Error{Code: api.CodeTooMany, Message: "busy", RetryAfter: time.Second},
	api.Errorf(api.CodeNoLeader, "no leader"),
	api.Errorf(api.CodeTimeout, "unknown outcome"),
	fmt.Errorf("lease: %w", api.Errorf(api.CodeLockHeld, "wrapped")),
	errPlain,
	&api.Error{Code: "weird", Message: "secret"},
}

// FuzzRequestDecoding sends the real handler one request made of the
// input's method, target (path and query) and body, parsed by net/http as
// a server parses it, and checks the answer: it is a JSON object with a
// JSON content type; its status is 200, 201 for a created session, 405
// for a method a path does not take, or the status of an error code the
// API documents; an error is exactly {"error","code"} with a known code of
// that status, and a Retry-After where the code calls for one. On a leader
// whose Service succeeds, bad input never reaches the Service, and what
// reaches it is within the API's bounds.
func FuzzRequestDecoding(f *testing.F) {
	for _, s := range []struct {
		method, target, body string
		mode                 uint8
	}{
		{"POST", "/v1/sessions", `{"ttl":"15s","lock_delay":"5s","name":"worker-1"}`, fuzzLeader},
		{"POST", "/v1/sessions", "", fuzzLeader},
		{"POST", "/v1/sessions/s1/keepalive", "", fuzzLeader},
		{"DELETE", "/v1/sessions/s1", "", fuzzServiceFails | 6<<2},
		{"GET", "/v1/sessions/s1?index=3&wait=30s", "", fuzzLeader},
		{"GET", "/v1/sessions?limit=2&after=s0&stale", "", fuzzNoLeader},
		{"POST", "/v1/locks/jobs/nightly/acquire", `{"session":"s1","mode":"shared","wait":"1m","seq":3}`, fuzzLeader},
		{"POST", "/v1/locks/jobs/nightly/acquire", `{"session":"s1"}`, fuzzServiceFails | 4<<2},
		{"POST", "/v1/locks/a/release", `{"session":"s1","seq":4}`, fuzzLeader},
		{"POST", "/v1/locks/a/check", `{"token":6}`, fuzzLeader},
		{"GET", "/v1/locks/a/b?consistent", "", fuzzLeader},
		{"GET", "/v1/locks?limit=1", "", fuzzBadLeaderAddr},
		{"POST", "/v1/elections/scheduler/campaign", `{"session":"s1","value":"10.0.0.7:9000","wait":"30s"}`, fuzzLeader},
		{"POST", "/v1/elections/scheduler/proclaim", `{"session":"s1","value":"v"}`, fuzzNoLeader},
		{"POST", "/v1/elections/scheduler/resign", `{"session":"s1"}`, fuzzServiceFails | 12<<2},
		{"GET", "/v1/elections/scheduler?index=9&wait=1s", "", fuzzLeader},
		{"GET", "/v1/elections", "", fuzzServiceFails | 8<<2},
		{"GET", "/v1/cluster", "", fuzzLeader},
		{"POST", "/v1/cluster/members", `{"id":"n2","peer":"127.0.0.1:7411","http":"127.0.0.1:7410"}`, fuzzLeader},
		{"DELETE", "/v1/cluster/members/n2", "", fuzzLeader},
		{"GET", "/healthz", "", fuzzLeader},
		{"GET", "/readyz", "", fuzzServiceFails | 9<<2},
		{"POST", "/v1/debug/faults", `{"peer":"n2","direction":"both","rule":"delay","delay":"50ms"}`, fuzzLeader | fuzzDebugRoutes},
		{"POST", "/v1/debug/clock", `{"offset":"2s","rate":1.5,"wall_step":"-1h"}`, fuzzLeader | fuzzDebugRoutes},
		{"DELETE", "/v1/debug/faults/n2", "", fuzzLeader | fuzzDebugRoutes},
		{"PUT", "/v1/locks/a", `{}`, fuzzLeader},
		{"POST", "/v1/locks/a/../b/acquire", `{"session":"s1"}`, fuzzLeader},
		{"POST", "/v1/locks/a/acquire", `{"session":"s1","wait":5}{}`, fuzzLeader},
		{"POST", "/v1/locks/a/acquire", `{"session":"s1"}`, fuzzLeader | fuzzPadBody},
		{"GET", "/v1/nothing?x=%zz", "", fuzzLeader},
		{"GET", "/v1/elections/e1/campaign", "", fuzzLeader},
		{"GET", "/v1/locks/x%2Facquire?stale", "", fuzzNoLeader},
		{"POST", "/v1/locks/x/acquire/acquire", `{"session":"s1"}`, fuzzLeader},
		{"POST", "/v1/sessions", `null`, fuzzLeader},
		{"POST", "/v1/sessions", "{\"ttl\":\"0s\",\"name\":\"\xff\"}", fuzzLeader},
		{"POST", "/v1/locks/a/check", `{"token":0}`, fuzzLeader},
		{"GET", "/v1/locks/a?stael&index=1", "", fuzzNoLeader},
	} {
		f.Add(s.method, s.target, []byte(s.body), s.mode)
	}
	f.Fuzz(func(t *testing.T, method, target string, body []byte, mode uint8) {
		if len(method) > fuzzMaxMethod || len(target) > fuzzMaxTarget || len(body) > fuzzMaxBody {
			return
		}
		if mode&fuzzPadBody != 0 {
			body = append(bytes.Repeat([]byte{' '}, api.MaxBody), body...)
		}
		var raw bytes.Buffer
		fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: lockd\r\nContent-Length: %d\r\n\r\n", method, target, len(body))
		raw.Write(body)
		req, err := http.ReadRequest(bufio.NewReader(&raw))
		if err != nil {
			return // net/http answers it before any handler sees it
		}
		svc := &fakeService{isLeader: true}
		switch mode & 3 {
		case fuzzServiceFails:
			svc.err = fuzzErrors[int(mode>>2&0xf)%len(fuzzErrors)]
		case fuzzNoLeader:
			svc.isLeader = false
		case fuzzBadLeaderAddr:
			svc.isLeader, svc.leaderHTTP = false, "not an address"
		}
		cfg := Config{Service: svc, Logger: slog.New(slog.DiscardHandler), NodeID: "n1"}
		if mode&fuzzDebugRoutes != 0 {
			cfg.Faults, cfg.Clock = &fakeFaults{}, &fakeClock{}
		}
		rec := httptest.NewRecorder()
		New(cfg).ServeHTTP(rec, req)
		checkAnswer(t, req, rec)
		if mode&3 == fuzzLeader {
			calls := svc.Calls()
			if rec.Code >= 400 && req.URL.Path != "/readyz" && len(calls) > 0 {
				t.Fatalf("%s %s answered %d, yet reached the Service: %+v", req.Method, req.URL, rec.Code, calls)
			}
			for _, c := range calls {
				if err := checkCall(c); err != nil {
					t.Fatalf("%s %s reached the Service with %s%+v: %v", req.Method, req.URL, c.Method, c.Args, err)
				}
			}
		}
	})
}

// checkAnswer checks the shape of any answer of the API to req.
func checkAnswer(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	what := fmt.Sprintf("%s %q answered %d %q", req.Method, req.URL.String(), rec.Code, rec.Body.String())
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", what, ct)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &fields); err != nil {
		t.Fatalf("%s: not a JSON object: %v", what, err)
	}
	switch {
	case rec.Code == http.StatusOK:
		return
	case rec.Code == http.StatusCreated:
		if req.Method != http.MethodPost || req.URL.Path != "/v1/sessions" {
			t.Fatalf("%s: 201 is only for a created session", what)
		}
		return
	case rec.Code < 400:
		t.Fatalf("%s: undocumented status", what)
	}
	var e struct {
		Error *string `json:"error"`
		Code  *string `json:"code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(fields) != 2 || e.Error == nil || e.Code == nil || *e.Error == "" {
		t.Fatalf("%s: an error must be exactly {\"error\",\"code\"}", what)
	}
	known, ok := codeStatus[*e.Code]
	switch {
	case !ok:
		t.Fatalf("%s: unknown code %q", what, *e.Code)
	case rec.Code == http.StatusMethodNotAllowed:
		if *e.Code != api.CodeBadRequest || rec.Header().Get("Allow") == "" {
			t.Fatalf("%s: 405 without bad_request and an Allow header", what)
		}
	case rec.Code == http.StatusServiceUnavailable && req.URL.Path == "/readyz":
		// Not ready is 503 whatever the reason's code.
	case known.status != rec.Code:
		t.Fatalf("%s: code %q has status %d", what, *e.Code, known.status)
	}
	if secs, err := strconv.Atoi(rec.Header().Get("Retry-After")); known.retry && (err != nil || secs < 1) {
		t.Fatalf("%s: code %q without a Retry-After", what, *e.Code)
	}
}

// checkCall returns an error unless the arguments of a Service call are
// within the API's bounds, as the handlers promise the Service.
func checkCall(c call) error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	inRange := func(field string, d, lo, hi time.Duration) {
		check(d >= lo && d <= hi, "%s %v outside [%v, %v]", field, d, lo, hi)
	}
	name := func(i int) {
		n, _ := c.Args[i].(string)
		check(api.ValidateName(n) == nil, "name %q", n)
	}
	read := func(o ReadOptions) {
		check(!o.Stale || !o.Consistent, "stale and consistent")
		inRange("query wait", o.Wait, 0, api.MaxQueryWait)
	}
	list := func(o ListOptions) {
		read(o.ReadOptions)
		check(o.Limit >= 1 && o.Limit <= api.MaxListLimit, "limit %d", o.Limit)
		check(len(o.After) <= api.MaxNameLen, "cursor of %d bytes", len(o.After))
	}
	switch c.Method {
	case "CreateSession":
		r := c.Args[0].(api.CreateSessionRequest)
		inRange("ttl", r.TTL.D(), api.MinTTL, api.MaxTTL)
		check(r.LockDelay != nil, "no lock_delay")
		if r.LockDelay != nil {
			inRange("lock_delay", r.LockDelay.D(), 0, api.MaxLockDelay)
		}
		check(len(r.Name) <= api.MaxSessionNameLen, "name of %d bytes", len(r.Name))
	case "KeepAlive", "DestroySession", "RemoveMember":
		check(c.Args[0] != "", "empty id")
	case "Session":
		check(c.Args[0] != "", "empty id")
		read(c.Args[1].(ReadOptions))
	case "Sessions", "Locks", "Elections":
		list(c.Args[0].(ListOptions))
	case "Acquire":
		name(0)
		check(api.VerbSuffix(c.Args[0].(string), api.LockVerbs) == "", "new lock name %q ends in a verb", c.Args[0])
		r := c.Args[1].(api.AcquireRequest)
		check(r.Session != "", "no session")
		check(r.Mode == api.ModeExclusive || r.Mode == api.ModeShared, "mode %q", r.Mode)
		inRange("wait", r.Wait.D(), 0, api.MaxWait)
	case "Release", "Resign":
		name(0)
		check(c.Args[1].(api.SessionRequest).Session != "", "no session")
	case "Check":
		name(0)
		check(c.Args[1] != uint64(0), "token 0")
	case "Campaign":
		name(0)
		check(api.VerbSuffix(c.Args[0].(string), api.ElectionVerbs) == "", "new election name %q ends in a verb", c.Args[0])
		r := c.Args[1].(api.CampaignRequest)
		check(r.Session != "", "no session")
		check(len(r.Value) <= api.MaxValueLen, "value of %d bytes", len(r.Value))
		inRange("wait", r.Wait.D(), 0, api.MaxWait)
	case "Proclaim":
		name(0)
		r := c.Args[1].(api.ProclaimRequest)
		check(r.Session != "", "no session")
		check(len(r.Value) <= api.MaxValueLen, "value of %d bytes", len(r.Value))
	case "Lock", "Election":
		name(0)
		read(c.Args[1].(ReadOptions))
	case "AddMember":
		m := c.Args[0].(api.Member)
		check(m.ID != "" && checkHostPort("peer", m.Peer) == nil, "member %+v", m)
		u, err := url.Parse(m.HTTP)
		check(err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Path == "", "http %q", m.HTTP)
		check(!m.Leader && m.LastContact == nil, "leader or last contact set by a request")
	case "Cluster", "Ready":
	default:
		check(false, "unknown method")
	}
	return errors.Join(errs...)
}

// FuzzQueryOptions parses a query string as a read's and a list's options:
// a query either is refused as bad_request or yields options within the
// API's bounds that say what the query says.
func FuzzQueryOptions(f *testing.F) {
	for _, q := range []string{
		"", "index=7&wait=30s", "stale", "stale=false&consistent", "consistent=1&stale=0",
		"limit=2&after=s1", "limit=10000", "limit=0", "limit=1.5", "wait=6m", "wait=-1s",
		"index=-1", "index=18446744073709551615", "stale&consistent", "after=" + strings.Repeat("a", 257),
		"wait=1h&wait=1s", "%zz&limit=3", "limit=+5", "wait=1e3s",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // as r.URL.Query does, keeping what parses
		ro, rerr := readOptions(q)
		lo, lerr := listOptions(q)
		for _, err := range []error{rerr, lerr} {
			if err != nil && api.CodeOf(err) != api.CodeBadRequest {
				t.Fatalf("%q: error %v is not bad_request", raw, err)
			}
		}
		if rerr != nil {
			if lerr == nil {
				t.Fatalf("%q: a list takes read options a read refuses (%v)", raw, rerr)
			}
			return
		}
		if lerr == nil && lo.ReadOptions != ro {
			t.Fatalf("%q: a list reads %+v, a read %+v", raw, lo.ReadOptions, ro)
		}
		if ro.Stale && ro.Consistent {
			t.Fatalf("%q: stale and consistent", raw)
		}
		if ro.Wait < 0 || ro.Wait > api.MaxQueryWait {
			t.Fatalf("%q: wait %v", raw, ro.Wait)
		}
		if n, _ := strconv.ParseUint(q.Get("index"), 10, 64); n != ro.Index {
			t.Fatalf("%q: index %d", raw, ro.Index)
		}
		if ro.Stale != readsLocally(&http.Request{URL: &url.URL{RawQuery: raw}}) {
			t.Fatalf("%q: stale %v, but readsLocally says otherwise", raw, ro.Stale)
		}
		if lerr != nil {
			return
		}
		if lo.Limit < 1 || lo.Limit > api.MaxListLimit || len(lo.After) > api.MaxNameLen || lo.After != q.Get("after") {
			t.Fatalf("%q: list options %+v", raw, lo)
		}
		if q.Get("limit") == "" && lo.Limit != api.DefaultListLimit {
			t.Fatalf("%q: limit %d without a limit", raw, lo.Limit)
		}
	})
}
