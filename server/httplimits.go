package server

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/connlimit"
	"github.com/lockd/lockd/internal/logthrottle"
)

// Defaults of the connection limits (Config.HTTPConns, Config.PeerConns).
// A client address may hold DefaultHTTPConnsPerClient connections to the
// API port; nodes hold a few each to the peer port. The totals are set
// from the process's open-file limit by DefaultTotalConns.
const (
	DefaultHTTPConnsPerClient = 512
	DefaultPeerConnsPerClient = 128
)

// DefaultTotalConns is the default bound on the connections one listener
// holds: a third of the open-file limit nofile, so that the API port and
// the peer port together leave a third for the data files, Raft's log
// and outgoing connections; at least 64.
func DefaultTotalConns(nofile uint64) int {
	return int(min(max(nofile/3, 64), 1<<30))
}

// warnEvery is the least time between two warnings a client can provoke
// (a connection past a limit, a refused TLS handshake).
const warnEvery = 10 * time.Second

// limitListener wraps l with lim, logging connections past a limit at
// most once per warnEvery. port names the port in the log ("API", "peer").
func limitListener(l net.Listener, lim connlimit.Limits, port string, logger *slog.Logger, opts ...connlimit.Option) *connlimit.Listener {
	th := logthrottle.New(warnEvery)
	warn := func(why connlimit.Reason, from net.Addr, open int) {
		if ok, held := th.Allow(); ok {
			logger.Warn("connection past a limit refused", "port", port, "limit", string(why), "remote_addr", from,
				"open", open, "refused_since_last_warning", held)
		}
	}
	return connlimit.New(l, lim, append(opts, connlimit.OnOver(warn))...)
}

// Bounds of the HTTP server: a client must send its headers within
// ReadHeaderTimeout, of at most MaxHeaderBytes, and its body within the
// body timeout (httpapi.Config.BodyTimeout); answers may take as long as
// the longest wait a request may ask for, plus a minute; an idle
// kept-alive connection is closed after IdleTimeout. There is no
// ReadTimeout: net/http would cancel a blocking request's context when it
// fires, in the middle of a wait; a body is at most api.MaxBody bytes.
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpIdleTimeout       = 2 * time.Minute
	httpMaxHeaderBytes    = 64 << 10
)

func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		WriteTimeout:      max(api.MaxWait, api.MaxQueryWait) + time.Minute,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return connlimit.WithConn(ctx, c) },
		ErrorLog:          log.New(&serverLog{log: logger, tls: logthrottle.New(warnEvery)}, "", 0),
	}
}

// serverLog takes net/http's own log lines into the structured log. A
// refused TLS handshake, which anyone who reaches the port can provoke,
// is a warning at most once per warnEvery (with how many were left out),
// and a debug line each time.
type serverLog struct {
	log *slog.Logger
	tls *logthrottle.Throttle
}

func (l *serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if rest, ok := strings.CutPrefix(msg, "http: TLS handshake error from "); ok {
		from, why, _ := strings.Cut(rest, ": ")
		l.log.Debug("TLS handshake refused", "remote_addr", from, "err", why)
		if ok, held := l.tls.Allow(); ok {
			l.log.Warn("TLS handshake on the API port refused", "remote_addr", from, "err", why,
				"refused_since_last_warning", held)
		}
		return len(p), nil
	}
	l.log.Warn("HTTP server: " + strings.TrimPrefix(msg, "http: "))
	return len(p), nil
}

// connCollector exports the connection limits' counts.
type connCollector struct {
	ls      map[string]*connlimit.Listener // by port
	open    *prometheus.Desc
	refused *prometheus.Desc
}

func newConnCollector(ls map[string]*connlimit.Listener) *connCollector {
	return &connCollector{
		ls: ls,
		open: prometheus.NewDesc("lockd_connections_open",
			"Connections this node holds open within its limits, by port (api, peer, and etcd with its API on).", []string{"port"}, nil),
		refused: prometheus.NewDesc("lockd_connections_refused_total",
			"Connections past a limit, by port and limit (per_client, total): answered 429/503 and closed on the API port, closed on the peer port.",
			[]string{"port", "limit"}, nil),
	}
}

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open; ch <- c.refused }

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	for port, l := range c.ls {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(l.Open()), port)
		for _, r := range []connlimit.Reason{connlimit.OverPerClient, connlimit.OverTotal} {
			ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(l.Refused(r)), port, string(r))
		}
	}
}
