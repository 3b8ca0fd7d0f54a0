package validate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestCheckFencing_ThroughTheResource drives the fenced resource over HTTP
// as two child clients would under a lockd that grants a newer holder a
// lower token: the resource, fencing on, refuses the newer holder's write,
// and the checker must still see that the tokens went back.
func TestCheckFencing_ThroughTheResource(t *testing.T) {
	r, err := traffic.NewResource(true, history.NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	post := func(path string, v any) *http.Response {
		t.Helper()
		b, _ := json.Marshal(v)
		resp, err := hc.Post(r.URL()+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	acquiring := func() int64 {
		t.Helper()
		resp := post("/acquiring", nil)
		defer resp.Body.Close()
		var at int64
		if err := json.NewDecoder(resp.Body).Decode(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	hold := func(client string, token uint64) int {
		t.Helper()
		call := acquiring()
		time.Sleep(time.Millisecond)
		post("/grant", traffic.Grant{Client: client, Session: client, Token: token, Call: call}).Body.Close()
		resp := post("/write", traffic.Write{Client: client, Session: client, Token: token})
		resp.Body.Close()
		post("/released", traffic.Grant{Client: client}).Body.Close()
		return resp.StatusCode
	}
	if st := hold("child-0", 10); st != http.StatusOK {
		t.Fatalf("first holder's write: status %d", st)
	}
	time.Sleep(time.Millisecond)
	if st := hold("child-1", 5); st == http.StatusOK {
		t.Fatalf("the resource accepted token 5 after 10 with fencing on")
	}
	gs := r.Grants()
	if len(gs) != 2 || gs[0].Call >= gs[0].Return || gs[0].Return >= gs[1].Call {
		t.Fatalf("grant windows not stamped in order: %+v", gs)
	}
	if v := CheckFencing(r.Writes(), gs); v.Violations != 1 {
		t.Fatalf("violations = %d, want 1: %v", v.Violations, v.Details)
	}
}
