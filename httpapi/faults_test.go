package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// TestFaults_OnlyWhenEnabled checks that the debug routes are unknown paths
// unless a FaultInjector is configured.
func TestFaults_OnlyWhenEnabled(t *testing.T) {
	srv := mustNewServer(t, newLeaderFake(), nil)
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/v1/debug/faults", ""},
		{"POST", "/v1/debug/faults", `{"peer":"n2","direction":"both","rule":"drop"}`},
		{"DELETE", "/v1/debug/faults", ""},
		{"DELETE", "/v1/debug/faults/n2", ""},
	} {
		rec := serve(srv, rq.method, rq.path, rq.body)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: status = %d, want 404", rq.method, rq.path, rec.Code)
		}
		if e := mustErrorBody(t, rec); e.Code != api.CodeNotFound {
			t.Errorf("%s %s: code = %q, want not_found", rq.method, rq.path, e.Code)
		}
	}
}

// TestFaults_Routes checks each debug route's status, body and the call
// that reached the injector. They are answered locally, also on a follower.
func TestFaults_Routes(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string // substring
		wantCall                 *call
	}{
		{"list", "GET", "/v1/debug/faults", "", 200, `{"faults":{"n9":"in drop"},"refused":{"n9":3}}`, nil},
		{"set", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"both","rule":"blackhole"}`, 200,
			`"n2":"both blackhole"`, &call{"SetFault", []any{"n2", "both", "blackhole", time.Duration(0)}}},
		{"set, rejected by injector", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"slow"}`, 400,
			`unknown rule \"slow\"`, &call{"SetFault", []any{"n2", "in", "slow", time.Duration(0)}}},
		{"set delay", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"out","rule":"delay","delay":"300ms"}`, 200,
			`"n2":"out delay"`, &call{"SetFault", []any{"n2", "out", "delay", 300 * time.Millisecond}}},
		{"set delay, bounds included", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"delay","delay":"60s"}`, 200,
			`"n2":"in delay"`, &call{"SetFault", []any{"n2", "in", "delay", time.Minute}}},
		{"set delay, missing", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"delay"}`, 400,
			`delay is required with rule \"delay\"`, nil},
		{"set delay, too short", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"DELAY","delay":"999us"}`, 400,
			"delay 999µs is out of range: it must be between 1ms and 1m0s", nil},
		{"set delay, too long", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"delay","delay":"61s"}`, 400,
			"delay 1m1s is out of range", nil},
		{"set delay, negative", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"delay","delay":"-1s"}`, 400,
			"delay -1s is out of range", nil},
		{"set delay, not a duration", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"delay","delay":300}`, 400,
			"delay: duration must be a string", nil},
		{"delay with another rule", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"drop","delay":"1s"}`, 400,
			`delay is only for rule \"delay\", not \"drop\"`, nil},
		{"zero delay with another rule", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in","rule":"drop","delay":"0s"}`, 200,
			`"n2":"in drop"`, &call{"SetFault", []any{"n2", "in", "drop", time.Duration(0)}}},
		{"set, missing rule", "POST", "/v1/debug/faults", `{"peer":"n2","direction":"in"}`, 400, "rule is required", nil},
		{"set, unknown field", "POST", "/v1/debug/faults", `{"peer":"n2","dir":"in"}`, 400, `unknown field \"dir\"`, nil},
		{"heal all", "DELETE", "/v1/debug/faults", "", 200, `{"faults":{},"refused":{"n9":3}}`, &call{"Heal", []any{""}}},
		{"heal one", "DELETE", "/v1/debug/faults/n9", "", 200, `{"faults":{},"refused":{"n9":3}}`, &call{"Heal", []any{"n9"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			faults := &fakeFaults{rules: map[string]string{"n9": "in drop"}}
			svc := &fakeService{leaderHTTP: "127.0.0.1:1"} // a follower
			rec := serve(mustNewServer(t, svc, faults), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %s, want %d and a body containing %s", rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
			}
			var want []call
			if tt.wantCall != nil {
				want = []call{*tt.wantCall}
			}
			if !reflect.DeepEqual(faults.calls, want) {
				t.Errorf("injector calls = %v, want %v", faults.calls, want)
			}
			if calls := svc.Calls(); len(calls) != 0 {
				t.Errorf("Service calls = %v, want none", calls)
			}
		})
	}
}
