package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/classic"
	"github.com/lockd/lockd/etcdapi"
	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/internal/connlimit"
	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/internal/peerhttp"
	"github.com/lockd/lockd/lease"
)

// Config configures a Server.
type Config struct {
	// Node is the Raft node's configuration. Its Stream, PeerAddr and
	// HTTPAddr are filled in by Start from the listeners when empty.
	Node lease.Config
	// HTTPListen and PeerListen are the addresses to listen on
	// ("127.0.0.1:0" lets the OS pick a port).
	HTTPListen string
	PeerListen string
	// HTTPListener and PeerListener, when set, are used instead of
	// listening on HTTPListen and PeerListen (tests pick ports first).
	HTTPListener net.Listener
	PeerListener net.Listener
	// UnsafeFaults exposes /v1/debug/faults and /v1/debug/clock, which let
	// anyone who can reach the HTTP port partition this node or skew its
	// clock. For tests and the fault harness only: in-process tests set it
	// directly, and cmd/lockd only from --unsafe-fault-injection, a flag
	// that only a build with the lockd_unsafe tag has.
	UnsafeFaults bool
	// Pprof serves Go's profiles at /debug/pprof/ on the HTTP port. They
	// show the process's internals to anyone who can reach that port:
	// turn it on to take a profile, not by default.
	Pprof bool
	// Logger receives every component's logs.
	Logger *slog.Logger
	// Election is "raft" (or empty) for Raft mode, or "ring", "bully" or
	// "invitation" for a classic mode, where the elected coordinator serves
	// from its own unreplicated state. The classic modes need
	// Node.InitialCluster (every member's peer address).
	Election string
	// MembersHTTP maps member ids to HTTP URLs; classic modes only, since
	// they keep no replicated member table. It is optional: the nodes tell
	// each other their Node.HTTPAddr over the peer port, and an address
	// given here overrides the one a member tells.
	MembersHTTP map[string]string

	// HTTPTLS, when set, serves the API over HTTPS with it (and, with
	// ClientAuth set, only to clients presenting a certificate it
	// verifies). The advertised HTTP address is then https://, unless
	// Node.HTTPAddr says otherwise, and so are bare --join addresses.
	HTTPTLS *tls.Config
	// PeerTLS, when set, makes every connection of the peer port mutual
	// TLS (internal/mux's WithTLS: TLS 1.3, certificates of the cluster's
	// CA required on both sides, the node ID a dialer announces checked
	// against its certificate), and makes the leader check, before it
	// adds a voter, that the node at the new peer address holds a
	// certificate of that CA naming the new member's id.
	PeerTLS *tls.Config
	// APIClientTLS configures this node's own calls to other nodes'
	// HTTPS APIs: asking the member at Node.Join to add it, and in the
	// classic modes forwarding requests to the coordinator (in Raft mode
	// they go to the leader's peer port). Nil means the system's roots and
	// no client certificate.
	APIClientTLS *tls.Config
	// ACL turns ACLs on in the HTTP API (httpapi.Config.ACL). Every node
	// of a cluster must have the same setting.
	ACL bool
	// ACLToken is the secret this node sends with its own requests to the
	// cluster (registering in the member table when it joins); with ACLs
	// on it must be an admin token's. Empty means Node.ACLBootstrapSecret.
	ACLToken string
	// RateLimit bounds the requests per second each client address may
	// send to this node (httpapi.Config.RateLimit).
	RateLimit httpapi.RateLimit
	// Metrics, if set, receives the node's and the HTTP API's metrics,
	// and is served at GET /metrics.
	Metrics *prometheus.Registry
	// Version is the lockd version the node runs (httpapi.Config.Version).
	Version string
	// HTTPConns and PeerConns bound the connections the API port and the
	// peer port hold, per client address and in total (internal/connlimit;
	// zero fields mean no bound: cmd/lockd sets the defaults). Past them
	// the API port answers 429 too_many_requests or 503 overloaded and
	// closes the connection; the peer port closes it.
	HTTPConns, PeerConns connlimit.Limits
	// HTTPBodyTimeout bounds the arrival of a request's body
	// (httpapi.Config.BodyTimeout).
	HTTPBodyTimeout time.Duration
	// EtcdListen, when set, serves etcd's v3 gRPC API (package etcdapi)
	// on that address, with HTTPTLS (and its client certificates) when
	// set, and the HTTP port's connection limits; EtcdListener, when set,
	// is used instead (tests). Neither set: nothing listens for it. Raft
	// mode only. In Raft mode the peer port always serves the calls other
	// nodes' etcd ports forward to the leader.
	EtcdListen   string
	EtcdListener net.Listener
}

// memberCheckTimeout bounds the leader's check of a new member's peer
// certificate (Config.PeerTLS).
const memberCheckTimeout = 5 * time.Second

// registerTimeout bounds one attempt of a node to put itself in the member
// table.
const registerTimeout = 5 * time.Second

// Server is a running lockd node.
type Server struct {
	cfg    Config
	log    *slog.Logger
	mux    *mux.Mux
	node   *lease.Node
	el     *classic.Node    // classic modes only
	clock  *lease.SkewClock // with UnsafeFaults only
	http   *http.Server
	httpLn net.Listener
	etcd   *grpc.Server // nil without Config.EtcdListen
	etcdLn net.Listener
	conns  map[string]*connlimit.Listener // the API, peer and etcd listeners, by port ("api", "peer", "etcd")
	// toPeer carries requests to other nodes' peer ports: forwarded
	// requests, and this node's registration (internal/peerhttp).
	toPeer *peerhttp.Transport
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	failOnce sync.Once
	failed   chan struct{} // closed when the node cannot go on (Failed)
	failErr  error
}

// Start listens, opens the node and serves HTTP. It returns once the node
// runs; it does not wait for a leader.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	peerLn, httpLn := cfg.PeerListener, cfg.HTTPListener
	var err error
	if peerLn == nil {
		if peerLn, err = net.Listen("tcp", cfg.PeerListen); err != nil {
			return nil, fmt.Errorf("listen on peer address %s: %w", cfg.PeerListen, err)
		}
	}
	if httpLn == nil {
		if httpLn, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			peerLn.Close()
			return nil, fmt.Errorf("listen on HTTP address %s: %w", cfg.HTTPListen, err)
		}
	}
	etcdLn, err := listenEtcd(cfg)
	if err != nil {
		peerLn.Close()
		httpLn.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "server"), stop: make(chan struct{}), failed: make(chan struct{})}
	s.conns = map[string]*connlimit.Listener{
		"api":  limitListener(httpLn, cfg.HTTPConns, "API", s.log, connlimit.AnswerOver()),
		"peer": limitListener(peerLn, cfg.PeerConns, "peer", s.log),
	}
	httpLn, peerLn = s.conns["api"], s.conns["peer"]
	if etcdLn != nil {
		s.conns["etcd"] = limitListener(etcdLn, cfg.HTTPConns, "etcd", s.log)
		s.etcdLn = s.conns["etcd"]
	}
	// net/http's own answers to requests it cannot parse, JSON where the
	// raw connection carries them (under TLS, when ServeTLS adds it).
	httpLn = httpapi.EarlyAnswers(httpLn, httpMaxHeaderBytes)
	s.httpLn = httpLn
	var muxOpts []mux.Option
	if cfg.PeerTLS != nil {
		muxOpts = append(muxOpts, mux.WithTLS(cfg.PeerTLS))
	}
	s.mux = mux.New(peerLn, cfg.Node.ID, cfg.Logger, muxOpts...)
	nc := cfg.Node
	if nc.PeerAddr == "" {
		nc.PeerAddr = peerLn.Addr().String()
	}
	if nc.HTTPAddr == "" {
		nc.HTTPAddr = s.scheme() + httpLn.Addr().String()
	}
	if s.etcdLn != nil && nc.EtcdAddr == "" {
		nc.EtcdAddr = s.scheme() + advertised(s.etcdLn.Addr(), nc.HTTPAddr)
	}
	if cfg.PeerTLS != nil && nc.CheckMember == nil {
		nc.CheckMember = s.checkMember
	}
	nc.Stream = &raftLayer{s.mux.Listen(mux.ProtoRaft)}
	nc.LeaseLayer = s.mux.Listen(mux.ProtoLease)
	fwd := s.mux.Listen(mux.ProtoForward)
	var skew *lease.SkewClock
	if cfg.UnsafeFaults {
		skew = lease.NewSkewClock()
		nc.Clock = skew
		s.clock = skew
	}
	nc.Logger = cfg.Logger
	for _, p := range nc.InitialCluster {
		s.mux.Faults().SetPeerAddr(p.ID, p.Addr)
	}
	s.cfg.Node = nc
	s.serveLogged("the peer port", s.mux.Serve)
	node, err := s.newNode()
	if err == nil {
		err = node.Open()
	}
	if err != nil {
		if s.el != nil {
			_ = s.el.Close()
		}
		_ = s.mux.Close()
		httpLn.Close()
		if s.etcdLn != nil {
			s.etcdLn.Close()
		}
		return nil, err
	}
	s.node = node
	hc := httpapi.Config{Service: node, Logger: cfg.Logger, NodeID: nc.ID, HTTPAddr: nc.HTTPAddr, RateLimit: cfg.RateLimit,
		BodyTimeout: cfg.HTTPBodyTimeout}
	if cfg.ACL {
		hc.ACL = node
	}
	hc.Version = cfg.Version
	// In Raft mode requests go to the leader's peer address over the peer
	// port; the classic modes name no peer address (lease.Node.Leader)
	// and forward over HTTP.
	hc.ForwardClient = &http.Client{Transport: httpapi.NewForwardTransport(cfg.APIClientTLS)}
	s.toPeer = &peerhttp.Transport{Dial: fwd.Dial}
	hc.PeerTransport = s.toPeer
	if cfg.UnsafeFaults {
		hc.Faults = faultInjector{s.mux.Faults()}
		hc.Clock = skew
	}
	handler := httpapi.New(hc)
	if cfg.Metrics != nil {
		err := errors.Join(node.RegisterMetrics(cfg.Metrics), handler.RegisterMetrics(cfg.Metrics),
			cfg.Metrics.Register(newConnCollector(s.conns)))
		if s.el != nil && err == nil {
			err = cfg.Metrics.Register(newClassicCollector(s.el, s.el.Stats().Algorithm))
		}
		if err != nil {
			_ = node.Close()
			_ = s.mux.Close()
			httpLn.Close()
			if s.etcdLn != nil {
				s.etcdLn.Close()
			}
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	var peerHandler http.Handler = handler
	if s.el == nil {
		ec := etcdapi.Config{Backend: node, ACL: cfg.ACL, PeerTransport: s.toPeer, PeerTLS: cfg.PeerTLS != nil, Logger: cfg.Logger,
			RateLimit: cfg.RateLimit}
		ea := etcdapi.New(ec)
		peerHandler = withEtcdForwards(handler, ea.ForwardHandler())
		if s.etcdLn != nil {
			var opts []grpc.ServerOption
			if cfg.HTTPTLS != nil {
				opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.HTTPTLS)))
			}
			s.etcd = ea.GRPCServer(opts...)
			s.serveLogged("etcd's API", func() error { return s.etcd.Serve(s.etcdLn) })
		}
	}
	s.serveLogged("forwarded requests", func() error { return peerhttp.Serve(fwd, peerHandler, s.log) })
	var h http.Handler = handler
	if cfg.Pprof {
		h = withPprof(h)
	}
	s.http = newHTTPServer(h, cfg.Logger.With("component", "http"))
	s.http.TLSConfig = cfg.HTTPTLS
	if cfg.HTTPTLS != nil {
		s.serveLogged("HTTPS", func() error { return s.http.ServeTLS(httpLn, "", "") })
	} else {
		s.serveLogged("HTTP", func() error { return s.http.Serve(httpLn) })
	}
	if s.el == nil {
		s.wg.Add(2)
		go s.register()
		go s.syncPeerAddrs()
	}
	return s, nil
}

// newNode builds the Raft node, or in a classic mode starts the elector
// and builds a node that serves from local state while it coordinates.
func (s *Server) newNode() (*lease.Node, error) {
	if s.cfg.Election == "" || s.cfg.Election == "raft" {
		return lease.New(s.cfg.Node)
	}
	alg, err := classic.ParseAlgorithm(s.cfg.Election)
	if err != nil {
		return nil, err
	}
	nc := s.cfg.Node
	if len(nc.InitialCluster) == 0 {
		return nil, fmt.Errorf("--election %s needs --initial-cluster: every member's peer address", alg)
	}
	addrs := map[string]string{}
	var ids []string
	for _, p := range nc.InitialCluster {
		addrs[p.ID] = p.Addr
		ids = append(ids, p.ID)
	}
	for id := range s.cfg.MembersHTTP {
		if !slices.Contains(ids, id) {
			return nil, fmt.Errorf("--cluster-http names %s, which is not in --initial-cluster", id)
		}
	}
	cc := classic.DefaultConfig()
	cc.ID, cc.Members, cc.Algorithm, cc.Logger = nc.ID, ids, alg, s.cfg.Logger
	tr := classic.NewMuxTransport(s.mux.Listen(alg.Proto()), addrs, s.cfg.Logger)
	tr.Advertise(nc.ID, nc.HTTPAddr)
	el, err := classic.NewNode(cc, tr)
	if err != nil {
		return nil, err
	}
	if err := el.Start(); err != nil {
		return nil, err
	}
	s.el = el
	return lease.NewLocal(nc, lease.Local{Elector: el, Members: s.cfg.MembersHTTP, Learned: tr.PeerHTTP, Describe: s.describeClassic})
}

// describeClassic adds the elector's view and counters to GET /v1/cluster.
func (s *Server) describeClassic(c *api.Cluster) {
	st := s.el.Stats()
	c.Mode = string(st.Algorithm)
	es := &api.ElectionStats{Algorithm: string(st.Algorithm), InElection: st.InElection,
		ElectionsStarted: st.ElectionsStarted, LastElection: api.Duration(st.LastElection),
		Sent: map[string]uint64{}, Received: map[string]uint64{}, Group: st.Group,
		Role: st.Role, Slaves: st.Slaves}
	for k, v := range st.Sent {
		es.Sent[k.String()] = v
	}
	for k, v := range st.Received {
		es.Received[k.String()] = v
	}
	c.Election = es
}

// Config returns the configuration the server runs with, addresses filled in.
func (s *Server) Config() Config { return s.cfg }

// Node returns the Raft node.
func (s *Server) Node() *lease.Node { return s.node }

// Clock returns the node's injectable clock, or nil without UnsafeFaults.
// Setting its rate also moves Raft's timers (see lease.SkewClock.OnChange).
func (s *Server) Clock() *lease.SkewClock { return s.clock }

// Faults returns the peer fault hooks, for in-process tests.
func (s *Server) Faults() *mux.Faults { return s.mux.Faults() }

// HTTPURL returns the URL the API is served at.
func (s *Server) HTTPURL() string { return s.cfg.Node.HTTPAddr }

// PeerAddr returns the peer address.
func (s *Server) PeerAddr() string { return s.cfg.Node.PeerAddr }

// ID returns the node id.
func (s *Server) ID() string { return s.cfg.Node.ID }

// serveLogged runs an accept loop in a goroutine of its own and logs the
// error that ends it, unless closing its listener or server did: a node
// that stops accepting must not do so silently.
func (s *Server) serveLogged(what string, loop func() error) {
	go func() {
		if err := loop(); !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("stopped serving "+what, "err", err)
		}
	}()
}

// Close stops the node: the leader hands over leadership first, then the
// HTTP server drains for a moment, then the peer listener closes.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		err = s.node.Close()
		if s.el != nil {
			_ = s.el.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if herr := s.http.Shutdown(ctx); herr != nil {
			_ = s.http.Close() // the drain timed out: drop what is left
		}
		s.stopEtcd()
		_ = s.mux.Close() // the node is closed: nothing is left to tell
	})
	return err
}

// Abort stops the node without a leadership transfer, as a crash would look
// to the rest of the cluster (for tests; kill -9 is the real thing).
func (s *Server) Abort() error {
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		_ = s.node.Abort() // a crash tells nobody either
		if s.el != nil {
			_ = s.el.Close()
		}
		_ = s.http.Close()
		s.stopEtcd()
		_ = s.mux.Close()
	})
	return nil
}

// listenEtcd listens on Config.EtcdListen, or returns EtcdListener: nil
// when neither is set.
func listenEtcd(cfg Config) (net.Listener, error) {
	switch {
	case cfg.EtcdListener == nil && cfg.EtcdListen == "":
		return nil, nil
	case cfg.Election != "" && cfg.Election != "raft":
		if cfg.EtcdListener != nil {
			cfg.EtcdListener.Close()
		}
		return nil, errors.New("etcd's API is served in Raft mode only")
	case cfg.EtcdListener != nil:
		return cfg.EtcdListener, nil
	}
	ln, err := net.Listen("tcp", cfg.EtcdListen)
	if err != nil {
		return nil, fmt.Errorf("listen on etcd address %s: %w", cfg.EtcdListen, err)
	}
	return ln, nil
}

// advertised is the host:port clients reach a listener bound to addr at:
// addr itself, or, bound to every address (0.0.0.0, ::), the host of the
// advertised HTTP URL with addr's port.
func advertised(addr net.Addr, httpURL string) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return addr.String()
	}
	if u, err := url.Parse(httpURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return net.JoinHostPort(host, port)
}

// EtcdAddr returns the address etcd's API listens on, "" if it does not.
func (s *Server) EtcdAddr() string {
	if s.etcdLn == nil {
		return ""
	}
	return s.etcdLn.Addr().String()
}

// stopEtcd closes etcd's port: its streams (lease keepalives) end at once.
func (s *Server) stopEtcd() {
	if s.etcd != nil {
		s.etcd.Stop()
	} else if s.etcdLn != nil {
		_ = s.etcdLn.Close()
	}
}

// withEtcdForwards serves the calls forwarded to etcd's API
// (etcdapi.ForwardPath) with etcd, everything else with api.
func withEtcdForwards(lockd, etcd http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, etcdapi.ForwardPath) {
			etcd.ServeHTTP(w, r)
			return
		}
		lockd.ServeHTTP(w, r)
	})
}

// register makes sure this node is in the cluster's member table with its
// current addresses: when joining, by asking the join address to add it
// over HTTP; once in the Raft configuration, by adding itself when it
// leads, or by asking the leader over the peer port, as a follower
// forwards a client's request (the leader's API answers it).
func (s *Server) register() {
	defer s.wg.Done()
	nc := s.cfg.Node
	m := api.Member{ID: nc.ID, Peer: nc.PeerAddr, HTTP: nc.HTTPAddr, Etcd: nc.EtcdAddr, Voter: !nc.NonVoter}
	target := strings.TrimRight(nc.Join, "/")
	if target != "" && !strings.Contains(target, "://") {
		target = s.scheme() + target
	}
	remote := &http.Client{Transport: httpapi.NewForwardTransport(s.cfg.APIClientTLS)}
	defer remote.CloseIdleConnections()
	toPeer := &http.Client{Transport: s.toPeer}
	for attempt := 0; ; attempt++ {
		if s.registered(m) {
			return
		}
		var err error
		via := ""
		switch isLeader, to := s.node.Leader(); {
		case s.node.Removal() != nil, s.node.LeftConfiguration():
			// A removed node waits to be added back by an operator: it
			// does not ask to be, even with --join; nor does one whose
			// removal it has not taken for settled yet.
		case target != "" && !s.inConfiguration():
			via = target
			err = postMember(remote, target, m, s.aclToken(), "")
			if err != nil && permanentJoinError(err) {
				// Retrying cannot help: a certificate this node does not
				// trust or that does not name the host, a token that may
				// not add members, a member the cluster refuses.
				s.fail(fmt.Errorf("cannot join the cluster through %s: %w", target, err))
				return
			}
		case isLeader:
			via = "this node, the leader"
			err = s.addSelf(m)
		case to.Peer != "":
			via = "the leader " + to.ID + " at its peer address " + to.Peer
			err = postMember(toPeer, "http://"+to.Peer, m, s.aclToken(), nc.ID)
		}
		if err != nil && attempt%20 == 5 {
			s.log.Warn("cannot register in the cluster yet; retrying", "via", via, "err", err)
		}
		select {
		case <-s.stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// addSelf puts this node, the leader, in the member table (or updates its
// addresses there).
func (s *Server) addSelf(m api.Member) error {
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	return s.node.AddMember(ctx, m)
}

func (s *Server) registered(m api.Member) bool {
	return s.Registered(m.ID, m.Peer, m.HTTP) && s.etcdRegistered(m) && s.inConfiguration()
}

// etcdRegistered reports whether this node's member table has m's etcd
// URL for it.
func (s *Server) etcdRegistered(m api.Member) bool {
	for _, x := range s.node.FSM().Members() {
		if x.ID == m.ID {
			return x.Etcd == m.Etcd
		}
	}
	return false
}

// Registered reports whether this node's member table has id with these
// addresses.
func (s *Server) Registered(id, peer, http string) bool {
	for _, x := range s.node.FSM().Members() {
		if x.ID == id && x.Peer == peer && x.HTTP == http {
			return true
		}
	}
	return false
}

func (s *Server) inConfiguration() bool {
	f := s.node.Raft().GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == s.cfg.Node.ID {
			return true
		}
	}
	return false
}

// aclToken returns the secret the node sends with its own requests.
func (s *Server) aclToken() string {
	if s.cfg.ACLToken != "" {
		return s.cfg.ACLToken
	}
	return s.cfg.Node.ACLBootstrapSecret
}

// Failed is closed when the node cannot go on and should stop: it could
// not join the cluster for a reason no retry fixes (Err says which).
// lockd serve exits with an error then.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Err returns why Failed was closed, or nil.
func (s *Server) Err() error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return nil
	}
}

func (s *Server) fail(err error) {
	s.failOnce.Do(func() {
		s.log.Error("the node cannot go on", "err", err)
		s.failErr = err
		close(s.failed)
	})
}

// joinRefused is a member-add request the cluster answered with an error.
type joinRefused struct {
	status int
	msg    string
}

func (e *joinRefused) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.msg)
}

// permanentJoinError reports whether err, from asking a member to add this
// node, is one that asking again cannot fix: a TLS certificate that is
// not trusted or does not name the host, or an answer of 400, 401 or 403
// (a malformed or conflicting member, a missing, unknown or insufficient
// token: a follower passes tokens it does not know to the leader, so a
// 401 is the leader's).
func permanentJoinError(err error) bool {
	var (
		unknownCA *x509.UnknownAuthorityError
		badHost   x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		refused   *joinRefused
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &invalid), errors.As(err, &verify):
		return true
	case errors.As(err, &refused):
		return refused.status == http.StatusBadRequest || refused.status == http.StatusUnauthorized || refused.status == http.StatusForbidden
	}
	return false
}

// postMember asks the node at base to add m, with token. forwardedBy, if
// not "", marks the request as sent to the leader by this node (the
// X-Lockd-Forwarded header): a node that no longer leads answers it 503
// instead of passing it on.
func postMember(hc *http.Client, base string, m api.Member, token, forwardedBy string) error {
	add := api.AddMember{Member: m}
	if !m.Voter {
		add.Voter = &m.Voter // a non-voter (--non-voter); a member keeps its role anyway
	}
	body, _ := json.Marshal(add)
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/cluster/members", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if forwardedBy != "" {
		req.Header.Set(httpapi.HeaderForwarded, forwardedBy)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		_ = json.NewDecoder(resp.Body).Decode(&e) // without the API's error body, the status says it
		return &joinRefused{status: resp.StatusCode, msg: e.Message}
	}
	return nil
}

// scheme is the scheme of this node's HTTP API: https:// with HTTPTLS.
func (s *Server) scheme() string {
	if s.cfg.HTTPTLS != nil {
		return "https://"
	}
	return "http://"
}

// checkMember is the leader's check of a new voter with PeerTLS: the node
// at peer must complete a mutual TLS handshake with a certificate of the
// cluster's CA that names id.
func (s *Server) checkMember(ctx context.Context, id, peer string) error {
	timeout := memberCheckTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := s.mux.VerifyPeer(peer, id, timeout); err != nil {
		return fmt.Errorf("its peer port did not prove a certificate of the cluster's CA for %s: %w", id, err)
	}
	return nil
}

// syncPeerAddrs keeps the fault hooks' address-to-node map in step with the
// Raft configuration, so rules named by node id apply to Raft's dials.
func (s *Server) syncPeerAddrs() {
	defer s.wg.Done()
	for {
		if f := s.node.Raft().GetConfiguration(); f.Error() == nil {
			for _, srv := range f.Configuration().Servers {
				s.mux.Faults().SetPeerAddr(string(srv.ID), string(srv.Address))
			}
		}
		select {
		case <-s.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// raftLayer adapts a mux layer to raft.StreamLayer.
type raftLayer struct{ *mux.Layer }

func (l *raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.Layer.Dial(string(addr), timeout)
}

// faultInjector adapts mux.Faults to httpapi.FaultInjector.
type faultInjector struct{ f *mux.Faults }

func (fi faultInjector) SetFault(peer, direction, rule string, delay time.Duration) error {
	if peer == "" {
		return errors.New("peer is required")
	}
	d, err := mux.ParseDirection(direction)
	if err != nil {
		return err
	}
	r, err := mux.ParseRule(rule)
	if err != nil {
		return err
	}
	switch {
	case r == mux.Delay && delay <= 0:
		return errors.New("rule delay needs a positive delay")
	case r == mux.Delay:
		fi.f.SetDelay(peer, d, delay)
		return nil
	case delay != 0:
		return fmt.Errorf("delay is only for rule delay, not %s", r)
	}
	fi.f.Set(peer, d, r)
	return nil
}

func (fi faultInjector) Heal(peer string) {
	if peer == "" {
		fi.f.HealAll()
		return
	}
	fi.f.Heal(peer)
}

func (fi faultInjector) Faults() any { return fi.f.Snapshot() }

func (fi faultInjector) Refused() any { return fi.f.Refused() }

// withPprof serves net/http/pprof's handlers under /debug/pprof/ and
// everything else with h.
func withPprof(h http.Handler) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.Handle("/", h)
	return m
}
