package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics counts the requests a node answers, by route (the routing
// table's path template, never a name), method and status, with their
// latency, and the requests it forwarded to the leader.
type httpMetrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	forwarded prometheus.Counter
	// bodyTimeouts counts request bodies that did not arrive in time.
	bodyTimeouts prometheus.Counter
}

// RegisterMetrics registers the HTTP API's metrics on reg and serves every
// metric of reg at GET /metrics (with ACLs on, for any valid token); until
// it is called, nothing is counted. Call it before serving.
func (s *Server) RegisterMetrics(reg *prometheus.Registry) error {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockd_http_requests_total",
			Help: "HTTP API requests answered by this node, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockd_http_request_duration_seconds",
			Help:    "Time to answer an HTTP API request, by route template (blocking requests include their wait).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 5, 30, 300},
		}, []string{"route"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockd_http_forwarded_total",
			Help: "Requests this node forwarded to the leader.",
		}),
		bodyTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockd_http_body_timeouts_total",
			Help: "Requests whose body did not arrive within the body timeout (answered 408 and closed).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.forwarded, m.bodyTimeouts} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	s.metrics = m
	s.gatherer = reg
	s.router = s.newRouter()
	return nil
}

// metricsRoute is GET /metrics, served in the Prometheus text format
// rather than JSON.
var metricsRoute = route{method: http.MethodGet, path: "/metrics", policy: local, need: anyToken}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if _, err := s.authorize(r, metricsRoute); err != nil {
		s.writeError(w, r, err)
		return
	}
	promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observed wraps h, the handler of route rt, to count its answers.
func (s *Server) observed(rt route, h http.Handler) http.Handler {
	if s.metrics == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(rt.path, rt.method, strconv.Itoa(sw.status)).Inc()
		s.metrics.latency.WithLabelValues(rt.path).Observe(time.Since(start).Seconds())
	})
}
