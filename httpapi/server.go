package httpapi

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/clientrate"
)

// HeaderForwarded marks a request that a follower proxied to the leader. Its
// value names the forwarding node. A node that is not the leader answers such
// a request 503 no_leader instead of forwarding it again, so that two nodes
// with different ideas of who leads cannot bounce a request between them.
const HeaderForwarded = "X-Lockd-Forwarded"

// forwardDialTimeout bounds how long a follower waits for a TCP connection to
// the leader. The wait for the leader's answer is bounded per request (see
// forward.go): a blocking acquire may legitimately take minutes to answer.
const forwardDialTimeout = 5 * time.Second

// FaultInjector breaks the node's peer connections on purpose, for the fault
// harness. server implements it on top of internal/mux, and only when the
// operator started the node with an explicit unsafe flag, which only a
// build with the lockd_unsafe tag has. Its methods may be called
// concurrently.
type FaultInjector interface {
	// SetFault installs a rule for traffic with peer. Direction is "in",
	// "out" or "both"; rule is "none", "drop", "blackhole" or "delay", and
	// delay is how long rule "delay" holds bytes (zero for the others; the
	// server has checked it against api.MinFaultDelay and MaxFaultDelay).
	// Every error is answered 400 bad_request with its message.
	SetFault(peer, direction, rule string, delay time.Duration) error
	// Heal removes the rules for peer, or every rule when peer is "".
	Heal(peer string)
	// Faults returns the rules in force. The value must be JSON-encodable.
	Faults() any
	// Refused returns how many connections the rules refused, by peer.
	// The value must be JSON-encodable.
	Refused() any
}

// ClockSkewer changes the node's clock on purpose, for the fault harness:
// the master lease, session deadlines and command timestamps all read it.
// server provides it only with the explicit unsafe flag (a build with the
// lockd_unsafe tag).
type ClockSkewer interface {
	// Set makes the clock read real time + offset, advancing at rate.
	Set(offset time.Duration, rate float64)
	// Skew returns the current offset and rate.
	Skew() (offset time.Duration, rate float64)
	// SetWallStep steps only the wall time the node stamps and shows by
	// step (absolute; 0 undoes it), not the time its timers measure.
	SetWallStep(step time.Duration)
	// WallStep returns the current wall step.
	WallStep() time.Duration
}

// Config configures a Server.
type Config struct {
	// Service is the node the API serves. Required.
	Service Service
	// Clock enables the /v1/debug/clock routes, which skew this node's
	// clock. Same warning as Faults.
	Clock ClockSkewer
	// Faults enables the /v1/debug/faults routes. Leave it nil unless the
	// operator asked for fault injection: the routes let anyone who can
	// reach the HTTP port partition the node.
	Faults FaultInjector
	// Logger receives 5xx errors and state changes (fault rules, members).
	// New adds component=httpapi. Nil means slog.Default().
	Logger *slog.Logger
	// ForwardClient supplies the Transport used to proxy requests to the
	// leader's HTTP address; only its Transport is used (a nil Transport
	// means http.DefaultTransport). Nil means a transport with a dial
	// timeout. Whatever the transport, a forwarded request ends when the
	// client goes away, or when the leader has not answered within the
	// request's wait plus a margin.
	ForwardClient *http.Client
	// PeerTransport, if set, carries forwarded requests to the leader's
	// peer address (LeaderAddr.Peer), which is the host of the request's
	// URL (internal/peerhttp's Transport). A leader without a peer
	// address, or every leader when PeerTransport is nil, is reached over
	// HTTP with ForwardClient's transport.
	PeerTransport http.RoundTripper
	// NodeID names this node in the X-Lockd-Forwarded header. Empty means
	// the Host the request was addressed to.
	NodeID string
	// HTTPAddr is this node's advertised HTTP URL, sent in the
	// X-Lockd-Leader header of the answers it serves as leader. Empty
	// means no header.
	HTTPAddr string
	// ACL, if set, turns ACLs on: every route but the health checks needs
	// a token (see acl.go and docs/security.md), and the
	// /v1/acl/tokens routes exist.
	ACL ACLService
	// RateLimit bounds the requests per client IP address this node
	// accepts (429 too_many_requests past it). Zero means none.
	RateLimit RateLimit
	// Version is the lockd version the node runs, written in the header
	// of the snapshots it serves (GET /v1/snapshot).
	Version string
	// BodyTimeout bounds how long a client may take to send a request's
	// body after its headers (408 request_timeout past it, and the
	// connection closed). Zero means DefaultBodyTimeout; negative, none.
	BodyTimeout time.Duration
}

// Server is the HTTP API of one node. It is an http.Handler; the caller owns
// the http.Server and its listener. The http.Server's WriteTimeout, if any,
// must exceed api.MaxWait, or blocking requests are cut off.
type Server struct {
	svc       Service
	faults    FaultInjector
	clock     ClockSkewer
	log       *slog.Logger
	transport http.RoundTripper // to the leader's HTTP address
	// peerTransport carries requests to the leader's peer address; nil
	// forwards over HTTP only.
	peerTransport http.RoundTripper
	nodeID        string
	httpAddr      string
	limits        forwardLimits
	acl           ACLService
	rate          *clientrate.Limiter
	metrics       *httpMetrics        // nil until RegisterMetrics
	gatherer      prometheus.Gatherer // what GET /metrics serves
	router        *mux.Router
	version       string
	// bodyTimeout bounds the arrival of a request's body (limitBody).
	bodyTimeout time.Duration
	// leaders is the one poll of the leader that every forwarded
	// request in flight waits on (watchLeader).
	leaders *leaderPoll
}

// New returns a Server for cfg. It does no I/O. It panics if cfg.Service is
// nil, which is a programming error.
func New(cfg Config) *Server {
	if cfg.Service == nil {
		panic("httpapi: Config.Service is nil")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{
		leaders:       &leaderPoll{leader: cfg.Service.Leader, interval: leaderWatchInterval},
		svc:           cfg.Service,
		faults:        cfg.Faults,
		clock:         cfg.Clock,
		log:           logger.With("component", "httpapi"),
		transport:     forwardTransport(cfg.ForwardClient),
		peerTransport: cfg.PeerTransport,
		nodeID:        cfg.NodeID,
		httpAddr:      cfg.HTTPAddr,
		acl:           cfg.ACL,
		rate:          clientrate.New(cfg.RateLimit),
		version:       cfg.Version,
	}
	switch {
	case cfg.BodyTimeout == 0:
		s.bodyTimeout = DefaultBodyTimeout
	case cfg.BodyTimeout > 0:
		s.bodyTimeout = cfg.BodyTimeout
	}
	s.router = s.newRouter()
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.overLimit(w, r) || s.limited(w, r) {
		return
	}
	s.limitBody(w, r)
	s.router.ServeHTTP(w, r)
}

// forwardTransport picks the RoundTripper used to reach the leader.
func forwardTransport(c *http.Client) http.RoundTripper {
	if c != nil {
		if c.Transport != nil {
			return c.Transport
		}
		return http.DefaultTransport
	}
	return NewForwardTransport(nil)
}

// NewForwardTransport returns the HTTP transport a node forwards requests
// with when no other is configured: no proxy, a bounded dial, kept-alive
// connections. tlsCfg configures https:// leaders (nil: the system's roots,
// no client certificate); a leader whose advertised address is https://
// is reached over HTTPS, so a cluster serving its API with TLS forwards
// with TLS.
func NewForwardTransport(tlsCfg *tls.Config) *http.Transport {
	return &http.Transport{
		// No Proxy: node-to-node traffic must not detour through one.
		TLSClientConfig:       tlsCfg.Clone(), // net/http writes into it; the caller's may be shared
		DialContext:           (&net.Dialer{Timeout: forwardDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// policy says which node answers a route.
type policy int

const (
	// local routes are always answered by the node that received them.
	local policy = iota
	// leaderOnly routes are answered by the leader; followers forward them.
	leaderOnly
	// leaderUnlessStale routes are forwarded unless the query has ?stale.
	leaderUnlessStale
	// leaderHandsOver routes are leaderOnly routes whose success makes
	// another node leader: a follower that forwarded one waits for the
	// old leader's answer even after it learns of the new leader.
	leaderHandsOver
)

// waitIn says where a request of a route says how long it may block, so
// that a follower bounds its forward of it (see forwardWait).
type waitIn int

const (
	// noWait routes do not block by design.
	noWait waitIn = iota
	// queryWait routes are the blocking reads: ?wait=, up to
	// api.MaxQueryWait.
	queryWait
	// bodyWait routes block for the body's "wait", up to api.MaxWait,
	// which the X-Lockd-Wait header repeats (api.HeaderWait): acquire and
	// campaign.
	bodyWait
)

// route is one entry of the routing table. handle returns the success body,
// written with status, or an error written through the status table. need
// is what the caller's token must allow when ACLs are on (nil: nothing,
// the route is public). query lists the query parameters the route takes;
// any other is refused (see checkQuery). wait says where its requests say
// how long they may block.
type route struct {
	method string
	path   string
	policy policy
	need   need
	status int
	handle func(*http.Request) (any, error)
	query  []string
	wait   waitIn
}

// The query parameters of the reads of one object and of the lists
// (route.query), and anyQuery, of a route that takes none but ignores
// any: the health checks, which no parameter could change and which
// probes may call with parameters of their own.
var (
	readQuery = []string{"index", "wait", "stale", "consistent"}
	listQuery = []string{"index", "wait", "stale", "consistent", "limit", "after"}
	anyQuery  = []string{"*"}
)

// verbRoutes maps the path of the GET of one lock or election to the
// verbs of its POST routes: a GET of a name that ends in one of them is
// the wrong method on that POST route, not a read (see verbMatcher).
var verbRoutes = map[string][]string{
	"/v1/locks/{name:.*}":     api.LockVerbs,
	"/v1/elections/{name:.*}": api.ElectionVerbs,
}

// routes is the routing table. Names may contain '/', so they are matched
// with ".*" and checked by api.ValidateName, which also rejects the empty
// name a "//" would otherwise smuggle in.
func (s *Server) routes() []route {
	const get, post, put, del, ok = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.StatusOK
	lockR, lockW := onName(acl.Lock, acl.Read), onName(acl.Lock, acl.Write)
	elecR, elecW := onName(acl.Election, acl.Read), onName(acl.Election, acl.Write)
	rs := []route{
		{post, "/v1/sessions", leaderOnly, anyToken, http.StatusCreated, s.createSession, nil, noWait},
		{get, "/v1/sessions", leaderUnlessStale, anyToken, ok, s.listSessions, listQuery, queryWait},
		{get, "/v1/sessions/{id}", leaderUnlessStale, anyToken, ok, s.getSession, readQuery, queryWait},
		{del, "/v1/sessions/{id}", leaderOnly, anyToken, ok, s.destroySession, nil, noWait},
		{post, "/v1/sessions/{id}/keepalive", leaderOnly, anyToken, ok, s.keepAlive, nil, noWait},
		{post, "/v1/sessions/keepalive", leaderOnly, anyToken, ok, s.keepAliveMany, nil, noWait},

		{get, "/v1/locks", leaderUnlessStale, anyToken, ok, s.listLocks, listQuery, queryWait},
		{get, "/v1/locks/{name:.*}", leaderUnlessStale, lockR, ok, s.getLock, readQuery, queryWait},
		{post, "/v1/locks/{name:.*}/acquire", leaderOnly, lockW, ok, s.acquire, nil, bodyWait},
		{post, "/v1/locks/{name:.*}/release", leaderOnly, lockW, ok, s.release, nil, noWait},
		{post, "/v1/locks/{name:.*}/check", leaderOnly, lockR, ok, s.check, nil, noWait},

		{get, "/v1/elections", leaderUnlessStale, anyToken, ok, s.listElections, listQuery, queryWait},
		{get, "/v1/elections/{name:.*}", leaderUnlessStale, elecR, ok, s.getElection, readQuery, queryWait},
		{post, "/v1/elections/{name:.*}/campaign", leaderOnly, elecW, ok, s.campaign, nil, bodyWait},
		{post, "/v1/elections/{name:.*}/proclaim", leaderOnly, elecW, ok, s.proclaim, nil, noWait},
		{post, "/v1/elections/{name:.*}/resign", leaderOnly, elecW, ok, s.resign, nil, noWait},

		{get, kvListPath, leaderUnlessStale, onPrefix(acl.Read), ok, s.listKV, kvListQuery, queryWait},
		{del, kvListPath, leaderOnly, onPrefix(acl.Write), ok, s.deletePrefix, []string{"prefix", "all"}, noWait},
		{get, kvKeyPath, leaderUnlessStale, onKey(acl.Read), ok, s.getKV, kvKeyQuery, queryWait},
		{put, kvKeyPath, leaderOnly, onKey(acl.Write), ok, s.putKV, nil, noWait},
		{del, kvKeyPath, leaderOnly, onKey(acl.Write), ok, s.deleteKV, []string{"cas"}, noWait},
		{post, txnPath, leaderOnly, anyToken, ok, s.txn, nil, noWait},

		{get, "/v1/cluster", local, anyToken, ok, s.cluster, nil, noWait},
		{post, "/v1/cluster/members", leaderOnly, admin, ok, s.addMember, nil, noWait},
		{del, "/v1/cluster/members/{id}", leaderOnly, admin, ok, s.removeMember, nil, noWait},
		{post, "/v1/cluster/leader-transfer", leaderHandsOver, admin, ok, s.transferLeader, nil, noWait},

		{get, "/healthz", local, nil, ok, s.healthz, anyQuery, noWait},
	}
	if _, can := s.svc.(Snapshotter); can {
		rs = append(rs, route{get, "/v1/snapshot", leaderOnly, admin, ok, s.snapshot, nil, noWait})
	}
	if s.acl != nil {
		rs = append(rs,
			route{post, "/v1/acl/tokens", leaderOnly, admin, http.StatusCreated, s.createToken, nil, noWait},
			route{get, "/v1/acl/tokens", leaderOnly, admin, ok, s.listTokens, nil, noWait},
			route{get, "/v1/acl/tokens/self", local, anyToken, ok, s.selfToken, nil, noWait},
			route{del, "/v1/acl/tokens/{accessor}", leaderOnly, admin, ok, s.revokeToken, nil, noWait},
		)
	}
	if s.clock != nil {
		rs = append(rs,
			route{get, "/v1/debug/clock", local, admin, ok, s.getClock, nil, noWait},
			route{post, "/v1/debug/clock", local, admin, ok, s.setClock, nil, noWait},
		)
	}
	if s.faults != nil {
		rs = append(rs,
			route{get, "/v1/debug/faults", local, admin, ok, s.listFaults, nil, noWait},
			route{post, "/v1/debug/faults", local, admin, ok, s.setFault, nil, noWait},
			route{del, "/v1/debug/faults", local, admin, ok, s.healAll, nil, noWait},
			route{del, "/v1/debug/faults/{peer}", local, admin, ok, s.healPeer, nil, noWait},
		)
	}
	return rs
}

// newRouter builds the gorilla/mux router from the routing table.
func (s *Server) newRouter() *mux.Router {
	r := mux.NewRouter()
	// Cleaning would turn "a/../b" into "b" with a redirect; names must
	// reach api.ValidateName as the client wrote them.
	r.SkipClean(true)
	for _, rt := range s.routes() {
		nr := r.NewRoute()
		if m := verbMatcher(rt); m != nil {
			// Before the path: gorilla/mux forgets that an earlier route
			// matched the path with another method (a 405) as soon as one
			// matcher of a later route succeeds, so this one succeeds only
			// where the path matches too.
			nr.MatcherFunc(m)
		}
		nr.Path(rt.path).Methods(rt.method).Handler(s.observed(rt, s.handler(rt)))
	}
	if s.gatherer != nil {
		r.Handle(metricsRoute.path, s.observed(metricsRoute, http.HandlerFunc(s.serveMetrics))).Methods(metricsRoute.method)
	}
	// /readyz needs a status of its own when the node is not ready.
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	s.statusPage(r)
	r.NotFoundHandler = http.HandlerFunc(s.notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(s.methodNotAllowed)
	return r
}

// handler adapts a route to http.Handler: forward if need be, then serve.
func (s *Server) handler(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withBodyLimit(r, rt)
		if s.removed(w, r, rt) {
			return
		}
		// Authorize before the body is read, and before forwarding: a
		// request without a token, or with a token that this node knows
		// and that does not allow it, is refused here. A token this node
		// does not know (yet: it may have been created an instant ago on
		// the leader) is left for the leader to judge.
		r2, err := s.authorize(r, rt)
		if err != nil && !isUnknownToken(err) {
			s.writeError(w, r, err)
			return
		}
		if qerr := checkQuery(r, rt); qerr != nil {
			s.writeError(w, r, qerr) // this node can tell as well as the leader
			return
		}
		if s.forward(w, r, rt) {
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r = r2
		if rt.policy != local && s.httpAddr != "" {
			if leader, _ := s.svc.Leader(); leader {
				w.Header().Set(api.HeaderLeader, s.httpAddr)
			}
		}
		body, err := rt.handle(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if raw, ok := body.(*rawAnswer); ok {
			raw.write(w, rt.status)
			return
		}
		if a, ok := body.(indexed); ok {
			w.Header().Set(api.HeaderIndex, strconv.FormatUint(a.index, 10))
			body = a.body
		}
		s.writeJSON(w, rt.status, s.filter(r, body))
	})
}

// notFound answers a path no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, api.Errorf(api.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed answers a known path with the wrong method, listing the
// methods the path accepts in the Allow header. A GET of a lock or
// election whose name seems to end in a verb says how such a name is read.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := s.allowed(r)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	msg := fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))
	if r.Method == http.MethodGet {
		for path, verbs := range verbRoutes {
			prefix := strings.TrimSuffix(path, "{name:.*}")
			name, ok := strings.CutPrefix(r.URL.Path, prefix)
			if verb := api.VerbSuffix(name, verbs); ok && verb != "" {
				msg += fmt.Sprintf(". No %s name may end in \"/%s\"; to read one named so by an older version, write its last slash as %%2F: GET %s%s",
					strings.TrimSuffix(strings.TrimPrefix(prefix, "/v1/"), "s/"), verb, prefix, api.ReadPathName(name, verbs))
			}
		}
	}
	s.writeErrorStatus(w, r, http.StatusMethodNotAllowed, api.Errorf(api.CodeBadRequest, "%s", msg), nil)
}

// verbMatcher returns the matcher that keeps the GET of one lock or
// election apart from the POST routes of its verbs, or nil for the other
// routes. The GET does not match a name that ends in a verb of its kind,
// which makes the path that of a POST route: such a GET is answered 405.
// A name that an older version let end in a verb is read by writing the
// '/' before the verb as %2F (api.ReadPathName): then the path's last
// segment, as the client wrote it, holds the slash, and the GET matches.
// The POST route of a verb matches only when that last segment is the
// verb: a %2F is part of the name, never the slash before a verb. Each
// matcher succeeds only where the route's path matches.
func verbMatcher(rt route) mux.MatcherFunc {
	for get, verbs := range verbRoutes {
		prefix := strings.TrimSuffix(get, "{name:.*}")
		if rt.path == get && rt.method == http.MethodGet {
			return func(r *http.Request, _ *mux.RouteMatch) bool {
				name, ok := strings.CutPrefix(r.URL.Path, prefix)
				return ok && (api.VerbSuffix(name, verbs) == "" || strings.Contains(lastSegment(r), "/"))
			}
		}
		if verb, ok := strings.CutPrefix(rt.path, get+"/"); ok {
			return func(r *http.Request, _ *mux.RouteMatch) bool {
				p := r.URL.Path
				return len(p) >= len(prefix)+1+len(verb) && strings.HasPrefix(p, prefix) &&
					strings.HasSuffix(p, "/"+verb) && lastSegment(r) == verb
			}
		}
	}
	return nil
}

// lastSegment returns what follows the last '/' of r's path as the client
// wrote it, unescaped: "x/acquire" for .../x%2Facquire.
func lastSegment(r *http.Request) string {
	esc := r.URL.EscapedPath()
	last, err := url.PathUnescape(esc[strings.LastIndexByte(esc, '/')+1:])
	if err != nil {
		return ""
	}
	return last
}

// checkQuery refuses a query string that does not parse, or that names a
// parameter the route does not take: a misspelt parameter (?stael) would
// otherwise be ignored and the request served as if it were absent.
func checkQuery(r *http.Request, rt route) error {
	if r.URL.RawQuery == "" || slices.Equal(rt.query, anyQuery) {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("malformed query string %q: %v", r.URL.RawQuery, err)
	}
	var unknown []string
	for k := range q {
		if !slices.Contains(rt.query, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	what := rt.method + " " + muxVar.ReplaceAllString(rt.path, "{$1}")
	if len(rt.query) == 0 {
		return badRequest("unknown query parameter %q: %s takes no query parameters", unknown[0], what)
	}
	return badRequest("unknown query parameter %q: %s takes only %s", unknown[0], what, strings.Join(rt.query, ", "))
}

// muxVar matches a path variable with a pattern, "{name:.*}".
var muxVar = regexp.MustCompile(`\{([a-z]+):[^}]*\}`)

// allowed lists the methods some route accepts for r's path, by asking the
// router to match r with each method in turn.
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		probe := r.WithContext(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if s.router.Match(probe, &match) && match.MatchErr == nil {
			out = append(out, m)
		}
	}
	return out
}
