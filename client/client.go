package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// Defaults of Config.
const (
	// DefaultRequestTimeout bounds one attempt of a call that does not block
	// on the server; a blocking call gets its wait on top.
	DefaultRequestTimeout = 5 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the pause between
	// retries; each pause is drawn at random up to the current bound, which
	// doubles after every failure (full jitter).
	DefaultMinBackoff = 20 * time.Millisecond
	DefaultMaxBackoff = time.Second
)

// Config configures a Client.
type Config struct {
	// Endpoints are the HTTP addresses of cluster members, as URLs
	// ("http://127.0.0.1:7400", "https://...") or host:port, which means
	// http://, or https:// when TLS is set. Any member will do; more
	// than one lets the client ride out a dead node. When an answer names
	// the leader (the X-Lockd-Leader header) and the leader's advertised
	// address is one of these, later requests go to it directly, which
	// saves the follower's hop; give the members as they advertise
	// themselves (--advertise-http) to benefit.
	Endpoints []string
	// HTTPClient sends the requests. Nil means a client built from TLS.
	// Its Timeout should be zero: the Client sets one per attempt.
	HTTPClient *http.Client
	// TLS configures HTTPS when HTTPClient is nil: RootCAs to verify a
	// cluster whose certificates the system does not trust, Certificates
	// for a cluster that requires client certificates (lockd serve
	// --client-ca). Leader addresses that answers name (X-Lockd-Leader)
	// are https:// on such a cluster, so following the leader keeps TLS.
	// The Client uses a copy: one config may serve many Clients.
	TLS *tls.Config
	// BearerToken, if set, is sent as "Authorization: Bearer <token>".
	BearerToken string
	// RequestTimeout bounds one attempt of a non-blocking call. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MinBackoff and MaxBackoff bound the pauses between retries.
	MinBackoff, MaxBackoff time.Duration
}

// Client is a connection to a lockd cluster. It is safe for concurrent use.
type Client struct {
	cfg       Config
	endpoints []string
	hc        *http.Client
	preferred atomic.Int32 // the endpoint to try first: the last that answered, or the leader an answer named
	renewals  *renewer     // keeps the client's sessions alive
}

// New returns a Client for the given endpoints with default settings.
func New(endpoints ...string) (*Client, error) {
	return NewWithConfig(Config{Endpoints: endpoints})
}

// NewWithConfig returns a Client. It does no I/O.
func NewWithConfig(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, ErrNoEndpoints
	}
	c := &Client{cfg: cfg}
	c.renewals = newRenewer(c)
	for _, e := range cfg.Endpoints {
		u, err := normalise(e, cfg.TLS != nil)
		if err != nil {
			return nil, err
		}
		c.endpoints = append(c.endpoints, u)
	}
	if c.cfg.RequestTimeout <= 0 {
		c.cfg.RequestTimeout = DefaultRequestTimeout
	}
	if c.cfg.MinBackoff <= 0 {
		c.cfg.MinBackoff = DefaultMinBackoff
	}
	if c.cfg.MaxBackoff < c.cfg.MinBackoff {
		c.cfg.MaxBackoff = max(DefaultMaxBackoff, c.cfg.MinBackoff)
	}
	c.hc = cfg.HTTPClient
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// A copy: net/http writes into its transport's TLS config, and
		// the caller's may be shared with other clients.
		tr.TLSClientConfig = cfg.TLS.Clone()
		tr.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: tr}
	}
	return c, nil
}

// normalise turns "host:port" into "http://host:port" (https:// when
// secure) and strips a trailing slash.
func normalise(e string, secure bool) (string, error) {
	e = strings.TrimRight(strings.TrimSpace(e), "/")
	if !strings.Contains(e, "://") {
		if secure {
			e = "https://" + e
		} else {
			e = "http://" + e
		}
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("client: bad endpoint %q: want http://host:port or host:port", e)
	}
	return e, nil
}

// retry says which failures a call may be repeated after.
type retry int

const (
	// idempotent calls are repeated after any failure that may be passing:
	// a transport error, no_leader, or timeout (outcome unknown; repeating
	// gives the same result: keepalives and reads change nothing, and lock
	// and election requests carry their request number).
	idempotent retry = iota
	// unsent calls are repeated only when the server surely did not apply
	// them: the connection failed before the request went out, or
	// no_leader. A retried session creation may leave an orphan session
	// that expires after its TTL; nothing worse.
	unsent
)

// call sends one API request, moving between endpoints and retrying as
// policy allows until it succeeds, fails for good, or ctx ends. wait is how
// long the server may block on it (acquire, blocking query). Every attempt
// sends the same body, so a lock or election request is repeated with its
// request number (seq) after a timeout or a lost answer: the leader
// applies it at most once, and answers a repeat from the current state.
func (c *Client) call(ctx context.Context, method, path string, in, out any, policy retry, wait time.Duration) error {
	return c.callTold(ctx, method, path, in, out, policy, wait, nil)
}

// callTold is call that also reports, through unknown (if not nil),
// whether an attempt before the last may have been applied: one whose
// outcome was left open (a lost answer, 504 timeout) and that was then
// repeated. A numbered write whose repeat is answered request_repeated
// was applied by such an attempt, and by it alone.
func (c *Client) callTold(ctx context.Context, method, path string, in, out any, policy retry, wait time.Duration, unknown *bool) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("client: encode request: %w", err)
		}
	}
	// A blocking acquire or campaign repeats its body's wait in a header:
	// a follower that forwards it bounds its wait for the leader's answer
	// by it, without decoding the body (api.HeaderWait).
	var bodyWait string
	switch r := in.(type) {
	case api.AcquireRequest:
		bodyWait = r.Wait.String()
	case api.CampaignRequest:
		bodyWait = r.Wait.String()
	}
	backoff := c.cfg.MinBackoff
	for attempt := 0; ; attempt++ {
		i := int(c.preferred.Load()) % len(c.endpoints)
		sent, err := c.attempt(ctx, c.endpoints[i], method, path, body, bodyWait, out, wait)
		if err == nil {
			return nil
		}
		if unknown != nil && openOutcome(err, sent) && retryable(err, sent, policy) && ctx.Err() == nil {
			*unknown = true
		}
		if !retryable(err, sent, policy) || ctx.Err() != nil {
			if ctx.Err() != nil && !isAPIError(err) {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), err) //nolint:errorlint // the context ended the call; the last attempt's error is told, not wrapped, so errors.As does not find a stale answer
			}
			return err
		}
		// Try the next member; it may know a leader this one does not.
		c.preferred.CompareAndSwap(int32(i), int32((i+1)%len(c.endpoints))) //nolint:gosec // G115: i < len(c.endpoints), a handful of addresses
		pause := time.Duration(rand.Int64N(int64(backoff) + 1))
		backoff = min(2*backoff, c.cfg.MaxBackoff)
		if c := api.CodeOf(err); c == api.CodeTooMany || c == api.CodeOverloaded {
			pause = max(pause, retryAfter(err)) // the node is full: not sooner than it asks
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err) //nolint:errorlint // the context ended the call; the last attempt's error is told, not wrapped, so errors.As does not find a stale answer
		case <-time.After(pause):
		}
	}
}

func isAPIError(err error) bool {
	var e *api.Error
	return errors.As(err, &e)
}

func retryable(err error, sent bool, policy retry) bool {
	switch api.CodeOf(err) {
	case api.CodeNoLeader, api.CodeTooMany, api.CodeRemoved, api.CodeOverloaded, api.CodeRequestTimeout:
		// The node applied nothing; another one may serve.
		return true
	case api.CodeTimeout:
		return policy == idempotent
	case "":
		return !sent || policy == idempotent
	}
	return false
}

// openOutcome reports whether an attempt that failed with err may have
// been applied: its answer was lost after it was sent, or was 504 timeout.
func openOutcome(err error, sent bool) bool {
	switch api.CodeOf(err) {
	case api.CodeTimeout:
		return true
	case "":
		return sent
	}
	return false
}

// attempt sends the request once to base, with bodyWait, if not "", in
// the X-Lockd-Wait header. sent reports whether the request may have
// reached the server.
func (c *Client) attempt(ctx context.Context, base, method, path string, body []byte, bodyWait string, out any, wait time.Duration) (sent bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout+wait)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return false, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.BearerToken)
	}
	if bodyWait != "" {
		req.Header.Set(api.HeaderWait, bodyWait)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return !isDialError(err), fmt.Errorf("client: %s %s%s: %w", method, base, path, err)
	}
	defer resp.Body.Close()
	limit := int64(16 << 20)
	if _, ok := out.(*rawBody); ok {
		limit = maxRawBody
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return true, fmt.Errorf("client: read response: %w", err)
	}
	c.follow(base, resp.Header.Get(api.HeaderLeader))
	if resp.StatusCode >= 300 {
		e := &api.Error{}
		if json.Unmarshal(raw, e) != nil || e.Code == "" {
			return true, fmt.Errorf("client: %s %s%s: %s", method, base, path, resp.Status)
		}
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return true, withIndexes(e, resp.Header)
	}
	if rb, ok := out.(*rawBody); ok {
		rb.body, rb.header = raw, resp.Header
		return true, nil
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return true, fmt.Errorf("client: decode %s %s: %w", method, path, err)
		}
	}
	return true, nil
}

// indexedError is an error answer that carried the index its read saw
// (api.HeaderIndex): a read of a key that does not exist.
type indexedError struct {
	err   *api.Error
	index uint64
}

func (e *indexedError) Error() string { return e.err.Error() }
func (e *indexedError) Unwrap() error { return e.err }

// withIndexes returns the error of an answer with the indexes its headers
// carry: *api.CompactedError for a compacted history (with the oldest
// index a watch may start after), *indexedError for an answer with
// X-Lockd-Index; else e.
func withIndexes(e *api.Error, h http.Header) error {
	if e.Code == api.CodeCompacted {
		if n, err := strconv.ParseUint(h.Get(api.HeaderOldestIndex), 10, 64); err == nil {
			return &api.CompactedError{Oldest: n}
		}
	}
	if n, err := strconv.ParseUint(h.Get(api.HeaderIndex), 10, 64); err == nil {
		return &indexedError{err: e, index: n}
	}
	return e
}

// follow makes the endpoint the leader named in an answer the client's
// preferred one, if it is one of its endpoints: the next request then
// goes to the leader directly instead of through a follower. A leader
// address the client was not given is ignored (it may not be reachable
// from here).
func (c *Client) follow(base, leader string) {
	if leader == "" || leader == base {
		return
	}
	leader, err := normalise(leader, c.cfg.TLS != nil)
	if err != nil {
		return
	}
	for i, e := range c.endpoints {
		if e == leader {
			c.preferred.Store(int32(i))
			return
		}
	}
}

// isDialError reports whether err happened before the request was written.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// lockPath escapes nothing but, in a read (no verb), the last '/' of a
// name that ends in a verb (api.ReadPathName), which only an older server
// let a client create: names are checked by the server and contain only
// [A-Za-z0-9._/-], which are safe in a path.
func lockPath(name, verb string) string {
	if verb == "" {
		return "/v1/locks/" + api.ReadPathName(name, api.LockVerbs)
	}
	return "/v1/locks/" + name + "/" + verb
}

// electionPath is lockPath for elections.
func electionPath(name, verb string) string {
	if verb == "" {
		return "/v1/elections/" + api.ReadPathName(name, api.ElectionVerbs)
	}
	return "/v1/elections/" + name + "/" + verb
}

// query renders read options as a query string.
func query(index uint64, wait time.Duration, consistency string) string {
	v := url.Values{}
	if wait > 0 {
		v.Set("index", strconv.FormatUint(index, 10))
		v.Set("wait", wait.String())
	}
	if consistency != "" {
		v.Set(consistency, "")
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
