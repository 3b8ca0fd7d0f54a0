package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
)

// api sends requests to one cluster through a shared connection pool.
type api struct {
	endpoints []string
	hc        *http.Client
}

func newAPI(endpoints []string, conns int) *api {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = max(conns, 2)
	var eps []string
	for _, e := range endpoints {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = "http://" + e
		}
		eps = append(eps, e)
	}
	return &api{endpoints: eps, hc: &http.Client{Transport: tr}}
}

// endpoint returns the endpoint of worker i: workers are spread over the
// endpoints round-robin.
func (a *api) endpoint(i int) string { return a.endpoints[i%len(a.endpoints)] }

// do sends one request to base+path and decodes a 2xx answer into out.
// Any other answer is returned as a *wire.Error.
func (a *api) do(ctx context.Context, base, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e wire.Error
		if json.Unmarshal(raw, &e) != nil || e.Code == "" {
			return fmt.Errorf("%s %s: HTTP %d: %.200s", method, path, resp.StatusCode, raw)
		}
		return &e
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func (a *api) createSession(ctx context.Context, base string, ttl time.Duration) (string, error) {
	zero := wire.Duration(0)
	var s wire.Session
	err := a.do(ctx, base, http.MethodPost, "/v1/sessions", wire.CreateSessionRequest{TTL: wire.Duration(ttl), LockDelay: &zero, Name: "lockd-bench"}, &s)
	return s.ID, err
}

func (a *api) destroySession(ctx context.Context, base, id string) error {
	return a.do(ctx, base, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
}

func (a *api) keepAlive(ctx context.Context, base, id string) error {
	return a.do(ctx, base, http.MethodPost, "/v1/sessions/"+id+"/keepalive", nil, nil)
}

func (a *api) acquire(ctx context.Context, base, name string, req wire.AcquireRequest) (wire.AcquireResponse, error) {
	var r wire.AcquireResponse
	err := a.do(ctx, base, http.MethodPost, "/v1/locks/"+name+"/acquire", req, &r)
	return r, err
}

func (a *api) release(ctx context.Context, base, name, session string, seq uint64) error {
	return a.do(ctx, base, http.MethodPost, "/v1/locks/"+name+"/release", wire.SessionRequest{Session: session, Seq: seq}, nil)
}

// commitIndex returns the commit index the leader reports (asked through
// any endpoint: a follower's own view is older).
func (a *api) commitIndex(ctx context.Context) (uint64, error) {
	var firstErr error
	for _, e := range a.endpoints {
		var c wire.Cluster
		if err := a.do(ctx, e, http.MethodGet, "/v1/cluster", nil, &c); err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if c.State == "leader" || c.State == "Leader" {
			return c.CommitIndex, nil
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("no endpoint of %v is the leader", a.endpoints)
	}
	return 0, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func isCode(err error, code string) bool { return wire.CodeOf(err) == code }
