package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/test/servertest"

	"github.com/lockd/lockd/api"
)

// api is a minimal HTTP client for tests: the real client library lives in
// client/, and these tests must not depend on it.
type nodeAPI struct {
	t    *testing.T
	base string
}

// do sends a JSON request and decodes a JSON response into out (on 2xx).
// It returns the status and, for errors, the error body.
func (a *nodeAPI) do(method, path string, in, out any) (int, api.Error) {
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
		return 0, api.Error{Code: "transport", Message: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e api.Error
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
	return resp.StatusCode, api.Error{}
}

// must sends a request that has to succeed.
func (a *nodeAPI) must(method, path string, in, out any) {
	a.t.Helper()
	if st, e := a.do(method, path, in, out); st >= 300 || st == 0 {
		a.t.Fatalf("%s %s: %d %s: %s", method, path, st, e.Code, e.Message)
	}
}

func (a *nodeAPI) session(ttl, delay time.Duration) string {
	a.t.Helper()
	d := api.Duration(delay)
	var s api.Session
	a.must("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &d}, &s)
	return s.ID
}

func (a *nodeAPI) acquire(name, session string, wait time.Duration) (api.AcquireResponse, int, api.Error) {
	a.t.Helper()
	var r api.AcquireResponse
	st, e := a.do("POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session, Wait: api.Duration(wait)}, &r)
	return r, st, e
}

func (a *nodeAPI) cluster() api.Cluster {
	a.t.Helper()
	var c api.Cluster
	a.must("GET", "/v1/cluster", nil, &c)
	return c
}

func newAPI(t *testing.T, c *servertest.Cluster, i int) *nodeAPI {
	return &nodeAPI{t: t, base: c.URL(i)}
}
