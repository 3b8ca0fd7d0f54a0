package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/api"
)

// lockd is the System of a lockd cluster, over its HTTP API: requests
// go to the endpoints through one shared connection pool.
type lockd struct {
	endpoints []string
	hc        *http.Client
}

// newLockd returns the System of the lockd cluster at endpoints (URLs or
// host:port), with up to conns idle connections kept per endpoint, over
// HTTPS with tlsCfg when it is not nil.
func newLockd(endpoints []string, conns int, tlsCfg *tls.Config) *lockd {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = max(conns, 2)
	tr.TLSClientConfig = tlsCfg.Clone() // net/http writes into it; the caller's may be shared
	scheme := "http://"
	if tlsCfg != nil {
		scheme = "https://"
	}
	var eps []string
	for _, e := range endpoints {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = scheme + e
		}
		eps = append(eps, e)
	}
	return &lockd{endpoints: eps, hc: &http.Client{Transport: tr}}
}

// endpoint returns the endpoint of worker i: workers are spread over the
// endpoints round-robin.
func (a *lockd) endpoint(i int) string { return a.endpoints[i%len(a.endpoints)] }

// do sends one request to base+path and decodes a 2xx answer into out.
// Any other answer is returned as a *api.Error.
func (a *lockd) do(ctx context.Context, base, method, path string, in, out any) error {
	return a.doSent(ctx, base, method, path, in, out, nil)
}

// doSent is do that calls sent, if not nil, once the request has been
// written to its connection.
func (a *lockd) doSent(ctx context.Context, base, method, path string, in, out any, sent func()) error {
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
	if sent != nil {
		var once sync.Once // the transport may write a request again on a new connection
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(w httptrace.WroteRequestInfo) {
				if w.Err == nil {
					once.Do(sent)
				}
			},
		}))
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
		var e api.Error
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

// NewSession creates a session through endpoint i, which its requests
// then go to; it has no lock delay, so that a row's locks are free again
// as soon as they are released.
func (a *lockd) NewSession(ctx context.Context, i int, ttl time.Duration) (Session, error) {
	zero := api.Duration(0)
	var s api.Session
	base := a.endpoint(i)
	err := a.do(ctx, base, http.MethodPost, "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &zero, Name: "lockd-bench"}, &s)
	if err != nil {
		return nil, err
	}
	return &lockdSession{api: a, base: base, id: s.ID}, nil
}

// Writes returns the leader's commit index.
func (a *lockd) Writes(ctx context.Context) (uint64, error) { return a.commitIndex(ctx) }

// LeaseFailures sums master_lease_failures over every endpoint.
func (a *lockd) LeaseFailures(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, e := range a.endpoints {
		var c api.Cluster
		if err := a.do(ctx, e, http.MethodGet, "/v1/cluster", nil, &c); err != nil {
			return 0, err
		}
		sum += c.MasterLeaseFailures
	}
	return sum, nil
}

// Waiters reads the lock name (a default read: on the leader) and counts
// its waiters.
func (a *lockd) Waiters(ctx context.Context, name string) (int, error) {
	var l api.Lock
	if err := a.do(ctx, a.endpoint(0), http.MethodGet, "/v1/locks/"+name, nil, &l); err != nil {
		return 0, err
	}
	return len(l.Waiters), nil
}

// Watch reads the lock name through endpoint i as a blocking query
// (?index=&wait=; a default read, which a follower forwards to the
// leader), or as a plain read if wait is 0.
func (a *lockd) Watch(ctx context.Context, i int, name string, index uint64, wait time.Duration, sent func()) (uint64, error) {
	path := "/v1/locks/" + name
	if wait > 0 {
		path += "?" + url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {wait.String()}}.Encode()
	}
	var l api.Lock
	if err := a.doSent(ctx, a.endpoint(i), http.MethodGet, path, nil, &l, sent); err != nil {
		return 0, err
	}
	return l.ModifyIndex, nil
}

// lockdSession is a session of a lockd cluster; seq numbers its lock
// requests, as the API asks.
type lockdSession struct {
	api  *lockd
	base string
	id   string
	seq  uint64
}

func (s *lockdSession) ID() string { return s.id }

func (s *lockdSession) KeepAlive(ctx context.Context) error {
	return s.api.do(ctx, s.base, http.MethodPost, "/v1/sessions/"+s.id+"/keepalive", nil, nil)
}

// KeepAliveMany renews ss in one POST /v1/sessions/keepalive through
// endpoint i.
func (a *lockd) KeepAliveMany(ctx context.Context, i int, ss []Session) ([]error, error) {
	req := api.KeepAliveManyRequest{IDs: make([]string, len(ss))}
	for k, s := range ss {
		req.IDs[k] = s.ID()
	}
	var out api.KeepAliveManyResponse
	if err := a.do(ctx, a.endpoint(i), http.MethodPost, "/v1/sessions/keepalive", req, &out); err != nil {
		return nil, err
	}
	gone := make(map[string]bool, len(out.Expired))
	for _, id := range out.Expired {
		gone[id] = true
	}
	errs := make([]error, len(ss))
	for k, id := range req.IDs {
		if gone[id] {
			errs[k] = ErrSessionExpired
		}
	}
	return errs, nil
}

func (s *lockdSession) TryAcquire(ctx context.Context, name string) error {
	return s.Acquire(ctx, name, 0)
}

func (s *lockdSession) Acquire(ctx context.Context, name string, wait time.Duration) error {
	s.seq++
	var r api.AcquireResponse
	return s.api.do(ctx, s.base, http.MethodPost, "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: s.id, Wait: api.Duration(wait), Seq: s.seq}, &r)
}

func (s *lockdSession) Release(ctx context.Context, name string) error {
	s.seq++
	return s.api.do(ctx, s.base, http.MethodPost, "/v1/locks/"+name+"/release", api.SessionRequest{Session: s.id, Seq: s.seq}, nil)
}

func (s *lockdSession) Destroy(ctx context.Context) error {
	return s.api.do(ctx, s.base, http.MethodDelete, "/v1/sessions/"+s.id, nil, nil)
}

// commitIndex returns the commit index the leader reports (asked through
// any endpoint: a follower's own view is older).
func (a *lockd) commitIndex(ctx context.Context) (uint64, error) {
	var firstErr error
	for _, e := range a.endpoints {
		var c api.Cluster
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
