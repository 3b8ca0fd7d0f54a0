package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/servertest"

	"github.com/lockd/lockd/httpapi/wire"
)

// api is a minimal HTTP client for tests: the real client library lives in
// client/, and these tests must not depend on it.
type api struct {
	t    *testing.T
	base string
}

// do sends a JSON request and decodes a JSON response into out (on 2xx).
// It returns the status and, for errors, the error body.
func (a *api) do(method, path string, in, out any) (int, wire.Error) {
	a.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			a.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, wire.Error{Code: "transport", Message: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e wire.Error
		_ = json.Unmarshal(raw, &e)
		if s := resp.Header.Get("Retry-After"); s != "" {
			n, _ := strconv.Atoi(s)
			e.RetryAfter = time.Duration(n) * time.Second
		}
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, wire.Error{}
}

// must sends a request that has to succeed.
func (a *api) must(method, path string, in, out any) {
	a.t.Helper()
	if st, e := a.do(method, path, in, out); st >= 300 || st == 0 {
		a.t.Fatalf("%s %s: %d %s: %s", method, path, st, e.Code, e.Message)
	}
}

func (a *api) session(ttl, delay time.Duration) string {
	a.t.Helper()
	d := wire.Duration(delay)
	var s wire.Session
	a.must("POST", "/v1/sessions", wire.CreateSessionRequest{TTL: wire.Duration(ttl), LockDelay: &d}, &s)
	return s.ID
}

func (a *api) acquire(name, session string, wait time.Duration) (wire.AcquireResponse, int, wire.Error) {
	a.t.Helper()
	var r wire.AcquireResponse
	st, e := a.do("POST", "/v1/locks/"+name+"/acquire", wire.AcquireRequest{Session: session, Wait: wire.Duration(wait)}, &r)
	return r, st, e
}

func (a *api) cluster() wire.Cluster {
	a.t.Helper()
	var c wire.Cluster
	a.must("GET", "/v1/cluster", nil, &c)
	return c
}

func newAPI(t *testing.T, c *servertest.Cluster, i int) *api { return &api{t: t, base: c.URL(i)} }
