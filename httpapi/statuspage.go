package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/httpapi/ui"
)

// uiRoute labels the status page's requests in the metrics: one series for
// every file of it.
var uiRoute = route{method: http.MethodGet, path: ui.Prefix, policy: local}

// statusPage adds the status page to r, outside the JSON routing table:
// GET /ui redirects to /ui/, and /ui/... serves the page's files. They are
// public, like the health checks: they carry nothing about the cluster,
// and the page asks for a token when the API wants one. A path under /ui/
// that names no file is answered like any unknown path.
func (s *Server) statusPage(r *mux.Router) {
	r.Handle(ui.Prefix[:len(ui.Prefix)-1], http.RedirectHandler(ui.Prefix, http.StatusMovedPermanently)).
		Methods(http.MethodGet, http.MethodHead)
	r.PathPrefix(ui.Prefix).Handler(s.observed(uiRoute, ui.Handler(http.HandlerFunc(s.notFound)))).
		Methods(http.MethodGet, http.MethodHead)
}
