package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/api"
)

// Bounds of a forwarded request. A follower never holds a request longer
// than the leader could legitimately take to answer it, so a leader that
// accepts the connection and then says nothing (paused, cut off, hung)
// costs the client a bounded wait and a 504, not minutes.
const (
	// defaultForwardMargin is how long a follower waits for the leader's
	// answer on top of the request's own wait: for a request that does not
	// block, it is the whole bound. It covers the leader's own bound on a
	// commit (lease.Config.ApplyTimeout, 10 s by default), after which the
	// leader answers 504 itself, and the leave-the-queue commit that ends
	// a blocking acquire whose wait ran out.
	defaultForwardMargin = 10 * time.Second
	// defaultLeaderGone is how long a forwarded request goes on while this
	// node knows no leader at all. An election takes about a second;
	// longer means this node is cut off, and its belief in the leader it
	// forwarded to is no longer worth waiting on.
	defaultLeaderGone = 5 * time.Second
)

// forwardLimits holds the bounds of forwarded requests; a zero field means
// its default. Tests shorten them.
type forwardLimits struct {
	margin     time.Duration // see defaultForwardMargin
	leaderGone time.Duration // see defaultLeaderGone
}

func (l forwardLimits) marginOrDefault() time.Duration {
	if l.margin > 0 {
		return l.margin
	}
	return defaultForwardMargin
}

func (l forwardLimits) leaderGoneOrDefault() time.Duration {
	if l.leaderGone > 0 {
		return l.leaderGone
	}
	return defaultLeaderGone
}

// Why a forwarded request was cut short, as the cause of its context.
var (
	errNoAnswer      = errors.New("the leader did not answer in time")
	errLeaderChanged = errors.New("this node now believes in another leader")
	errLeaderUnknown = errors.New("this node has known no leader for too long")
)

// forward serves r by proxying it to the leader when the route's policy
// says the leader must answer and this node is not the leader. It reports
// whether it answered r; if not, the caller serves r itself.
//
// What the client learns when forwarding fails follows one rule: 503
// no_leader only if nothing reached the leader (no leader known, no
// connection made), so that a retry cannot apply the request twice; 504
// timeout, outcome unknown, once a connection to the leader was made and
// no answer came back.
//
// The leader is reached at the peer address Raft knows it by, over the
// peer port (Config.PeerTransport), or where there is none (the classic
// modes) at its HTTP address. Neither costs a look-up in the member table,
// nor does this node decode the request's body: how long the leader may
// take comes from the query or the X-Lockd-Wait header (forwardWait).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, rt route) bool {
	if rt.policy == local || rt.policy == leaderUnlessStale && readsLocally(r) {
		return false
	}
	isLeader, to := s.svc.Leader()
	if isLeader {
		return false
	}
	if via, ok := r.Header[http.CanonicalHeaderKey(HeaderForwarded)]; ok {
		s.writeError(w, r, noLeader("this node is not the leader either (the request was forwarded by %s); retry shortly", strings.Join(via, ", ")))
		return true
	}
	f := &forwarding{}
	target, transport := s.peerTarget(to)
	if target == nil {
		leaderHTTP := s.leaderHTTP(to)
		if leaderHTTP == "" {
			s.writeError(w, r, noLeader("no leader is known; retry shortly"))
			return true
		}
		var err error
		if target, err = leaderURL(leaderHTTP); err != nil {
			e := noLeader("the leader's address %q is not usable; retry shortly", leaderHTTP)
			s.writeErrorStatus(w, r, codeStatus[e.Code].status, e, err)
			return true
		}
		f.target = target.Host
	}
	wait, err := forwardWait(r, rt)
	if err != nil {
		s.writeError(w, r, err) // this node can tell as well as the leader
		return true
	}
	if err := readAhead(r); err != nil {
		s.writeError(w, r, err) // the body did not arrive: nothing is forwarded
		return true
	}
	if s.metrics != nil {
		s.metrics.forwarded.Inc()
	}
	f.limit = wait + s.limits.marginOrDefault()
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	f.cancel = cancel
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// From the first connection on, the leader may have read the
		// request: whatever happens next, the outcome is unknown.
		GotConn: func(httptrace.GotConnInfo) { f.sent.Store(true) },
	})
	timer := time.AfterFunc(f.limit, func() { f.abort(errNoAnswer) })
	defer timer.Stop()
	go s.watchLeader(ctx, f, to, rt.policy == leaderHandsOver)
	s.proxy(target, transport, f, to).ServeHTTP(w, r.WithContext(ctx))
	return true
}

// peerTarget returns the leader's peer address as a URL and the peer
// transport to carry a request there, or nil if the request must go over
// HTTP (no peer address, or no peer transport) with s.transport.
func (s *Server) peerTarget(to LeaderAddr) (*url.URL, http.RoundTripper) {
	if to.Peer == "" || s.peerTransport == nil {
		return nil, s.transport
	}
	return &url.URL{Scheme: "http", Host: to.Peer}, s.peerTransport
}

// leaderHTTP returns the leader's HTTP address, from the member table if
// the Service did not give it ("" if unknown).
func (s *Server) leaderHTTP(to LeaderAddr) string {
	if to.HTTP == "" && to.ID != "" {
		return s.svc.MemberHTTP(to.ID)
	}
	return to.HTTP
}

// leaderHost names the leader in the message of a forward that failed: its
// HTTP host:port as clients know it, or its peer address if its HTTP
// address is not known.
func (s *Server) leaderHost(to LeaderAddr) string {
	if u, err := leaderURL(s.leaderHTTP(to)); err == nil && u.Host != "" {
		return u.Host
	}
	return to.Peer
}

// forwarding is the state of one forwarded request.
type forwarding struct {
	target string        // the leader's host:port, for messages ("" until needed when sent to its peer address)
	limit  time.Duration // how long the leader has to send its answer's headers
	sent   atomic.Bool   // a connection to the leader was made

	mu       sync.Mutex
	answered bool // the leader's status line arrived: nothing may cut it short now
	cancel   context.CancelCauseFunc
}

// abort ends the forwarded request with cause, unless the leader's answer
// has already begun (then its outcome is known and it must reach the
// client whole).
func (f *forwarding) abort(cause error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.answered {
		f.cancel(cause)
	}
}

// answer marks the leader's answer as begun. It fails if the request was
// aborted first.
func (f *forwarding) answer(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	f.answered = true
	return nil
}

// leaderWatchInterval is how often a forwarded request checks that the node
// it was sent to is still the leader.
const leaderWatchInterval = 100 * time.Millisecond

// watchLeader aborts a forwarded request when this node comes to believe
// in another leader, or has known no leader for longer than the limit. A
// leader that is paused or cut off would otherwise hold the request until
// it returns, long after the cluster moved on; the client instead gets an
// answer at once and retries against the new leader. With handsOver (the
// request itself moves leadership) a new leader is no reason to stop.
func (s *Server) watchLeader(ctx context.Context, f *forwarding, to LeaderAddr, handsOver bool) {
	s.leaders.join()
	defer s.leaders.leave()
	gone := s.limits.leaderGoneOrDefault()
	var unknownSince time.Time
	for {
		woken := s.leaders.next()
		isLeader, now := s.svc.Leader()
		switch {
		case (isLeader || now.Known() && now != to) && !handsOver:
			f.abort(errLeaderChanged)
			return
		case now.Known():
			unknownSince = time.Time{}
		case unknownSince.IsZero():
			unknownSince = time.Now()
		case time.Since(unknownSince) >= gone:
			f.abort(errLeaderUnknown)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-woken:
		}
	}
}

// proxy returns a reverse proxy to the leader at target for one request,
// carried by transport. It streams both bodies, ends the forwarded request
// when the client goes away (the inbound context), and relays the leader's
// status, headers and body unchanged.
func (s *Server) proxy(target *url.URL, transport http.RoundTripper, f *forwarding, to LeaderAddr) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwarded, s.name(pr.In))
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			return f.answer(resp.Request.Context())
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if f.target == "" {
				f.target = s.leaderHost(to)
			}
			e := f.failure(context.Cause(r.Context()))
			s.writeErrorStatus(w, r, codeStatus[e.Code].status, e, err)
		},
	}
}

// failure explains a forward that got no answer from the leader. cause is
// why the request's context ended, nil if it did not (the connection
// failed).
func (f *forwarding) failure(cause error) *api.Error {
	if !f.sent.Load() {
		// No connection was ever made: the leader has not seen the request.
		switch cause {
		case errLeaderChanged: //nolint:errorlint // context.Cause returns the sentinel f.abort gave, unwrapped
			return noLeader("the leader changed before the request reached %s; retry", f.target)
		case errLeaderUnknown:
			return noLeader("no leader is known any more; retry shortly")
		case errNoAnswer:
			return noLeader("cannot reach the leader at %s within %v; retry shortly", f.target, f.limit)
		}
		return noLeader("cannot reach the leader at %s; retry shortly", f.target)
	}
	switch cause {
	case errNoAnswer: //nolint:errorlint // context.Cause returns the sentinel f.abort gave, unwrapped
		return unknownOutcome("the leader at %s did not answer within %v; the outcome is unknown", f.target, f.limit)
	case errLeaderChanged:
		return unknownOutcome("the leader changed while the request was forwarded to %s; the outcome is unknown", f.target)
	case errLeaderUnknown:
		return unknownOutcome("this node lost track of the leader while the request was forwarded to %s; the outcome is unknown", f.target)
	}
	return unknownOutcome("the connection to the leader at %s failed after the request was sent; the outcome is unknown", f.target)
}

// readAhead reads r's body into memory before anything is sent to the
// leader (it is at most bodyLimit(r) bytes; a longer one is passed on
// whole, for the leader to refuse), and puts it back for the proxy. A body
// that cannot be read is an error (request_timeout past the body timeout),
// so the leader never sees part of a request. The body is not decoded.
func readAhead(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(bodyLimit(r))+1))
	if err != nil {
		return bodyError(err)
	}
	r.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(b), r.Body), Closer: r.Body}
	return nil
}

// replayBody is a request body whose first bytes were read ahead.
type replayBody struct {
	io.Reader
	io.Closer
}

// name is this node's name in the X-Lockd-Forwarded header.
func (s *Server) name(r *http.Request) string {
	if s.nodeID != "" {
		return s.nodeID
	}
	return r.Host
}

// noLeader returns a no_leader error that asks the client to retry in a
// second. It means that the request did not and will not take effect.
func noLeader(format string, args ...any) *api.Error {
	e := api.Errorf(api.CodeNoLeader, format, args...)
	e.RetryAfter = time.Second
	return e
}

// unknownOutcome returns a timeout error: the request may or may not take
// effect, and the client must find out (or repeat it with the same request
// number, which the leader applies at most once).
func unknownOutcome(format string, args ...any) *api.Error {
	return api.Errorf(api.CodeTimeout, format, args...)
}

// leaderURL parses the leader's HTTP address, a URL or a bare host:port,
// as a member's address is checked when it joins.
func leaderURL(addr string) (*url.URL, error) {
	norm, err := normaliseHTTP(addr)
	if err != nil {
		return nil, err
	}
	return url.Parse(norm)
}
