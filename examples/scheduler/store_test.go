package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestStore_FencesAndRecordsOnce drives one store through a takeover by a
// coordinator, its results, a newer coordinator's takeover and the old
// one's late result, step by step.
func TestStore_FencesAndRecordsOnce(t *testing.T) {
	st := newStore(3, defaultElection, slog.New(slog.NewTextHandler(io.Discard, nil)))
	steps := []struct {
		name, method, path, body string
		wantCode                 int
		wantBody                 string // the answer's JSON, compared as values
	}{
		{"first coordinator takes over", "POST", "/takeover", `{"token":10,"worker":"w1"}`, 200, `{"pending":[1,2,3]}`},
		{"it posts a result", "POST", "/results", `{"task":2,"result":"4","token":10,"worker":"w1"}`, 200, `{"task":2,"outcome":"accepted"}`},
		{"a second result for a done task is ignored", "POST", "/results", `{"task":2,"result":"4","token":10,"worker":"w1"}`, 200, `{"task":2,"outcome":"duplicate"}`},
		{"a newer coordinator takes over and sees task 2 done", "POST", "/takeover", `{"token":20,"worker":"w2"}`, 200, `{"pending":[1,3]}`},
		{"the old coordinator's late result is refused", "POST", "/results", `{"task":1,"result":"1","token":10,"worker":"w1"}`, 409, `{"error":"client: stale fencing token: token 10 for \"scheduler/coordinator\", but 20 has been accepted","code":"stale_token"}`},
		{"so is its late takeover", "POST", "/takeover", `{"token":10,"worker":"w1"}`, 409, `{"error":"client: stale fencing token: token 10 for \"scheduler/coordinator\", but 20 has been accepted","code":"stale_token"}`},
		{"the new coordinator's results are accepted", "POST", "/results", `{"task":1,"result":"1","token":20,"worker":"w2"}`, 200, `{"task":1,"outcome":"accepted"}`},
		{"a task that does not exist", "POST", "/results", `{"task":4,"result":"16","token":20,"worker":"w2"}`, 400, `{"error":"no task 4: tasks are 1..3","code":"bad_request"}`},
		{"an unknown field", "POST", "/results", `{"task":3,"token":20,"tokn":21}`, 400, ``},
		{"status counts it all", "GET", "/status", ``, 200, `{"tasks":3,"done":2,"duplicates":1,"stale_rejected":1,"token":20,"coordinator":"w2"}`},
		{"results in the order accepted, and the refused one", "GET", "/results", ``, 200, `{
			"accepted":[{"task":2,"result":"4","token":10,"worker":"w1"},{"task":1,"result":"1","token":20,"worker":"w2"}],
			"rejected":[{"task":1,"result":"1","token":10,"worker":"w1"}]}`},
	}
	for _, s := range steps {
		rec := httptest.NewRecorder()
		st.ServeHTTP(rec, httptest.NewRequest(s.method, s.path, strings.NewReader(s.body)))
		if rec.Code != s.wantCode {
			t.Fatalf("%s: %s %s = %d %s, want %d", s.name, s.method, s.path, rec.Code, rec.Body, s.wantCode)
		}
		if s.wantBody == "" {
			continue
		}
		var got, want any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: answer %q: %v", s.name, rec.Body, err)
		}
		if err := json.Unmarshal([]byte(s.wantBody), &want); err != nil {
			t.Fatalf("%s: bad want: %v", s.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: answer %s, want %s", s.name, rec.Body, s.wantBody)
		}
	}
}

func TestStore_RejectsMalformedRequests(t *testing.T) {
	st := newStore(3, defaultElection, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"not JSON", "POST", "/results", `task=1`, http.StatusBadRequest},
		{"task 0", "POST", "/results", `{"task":0,"token":1}`, http.StatusBadRequest},
		{"body too large", "POST", "/results", `{"result":"` + strings.Repeat("x", maxBody) + `"}`, http.StatusRequestEntityTooLarge},
		{"wrong method", "GET", "/takeover", ``, http.StatusMethodNotAllowed},
		{"unknown path", "GET", "/pending", ``, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			st.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if rec.Code != tc.want {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.want)
			}
		})
	}
}
