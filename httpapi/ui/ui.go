// Package ui serves lockd's status page: a few static files (HTML, one
// script, one style sheet, an icon) embedded in the binary, which read the
// node's JSON API from the browser and keep themselves current with
// blocking queries.
//
// It is not an API and holds no state: everything the page shows comes from
// /v1/cluster, /v1/sessions, /v1/locks, /v1/elections, /v1/kv (read when
// shown, not kept current) and /metrics, with the token the user typed in
// (ACLs on). The files are public, like the health
// checks: they hold nothing about the cluster. Every answer carries a
// Content-Security-Policy that lets the page load and connect to its own
// origin only.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// Prefix is the path the status page is served under.
const Prefix = "/ui/"

// ContentSecurityPolicy is sent with every file: scripts, styles, images
// and fetches from the page's own origin only, no inline code, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// file is one embedded file, read once.
type file struct {
	name string
	body []byte
	etag string
	kind string
}

// files maps the path under Prefix to its file; "" is the page itself.
var files = mustLoad()

func mustLoad() map[string]file {
	out := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		rel := p[len("static/"):]
		out[rel] = file{name: rel, body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`,
			kind: mime.TypeByExtension(path.Ext(rel))}
		return nil
	})
	if err != nil {
		panic("ui: embedded files: " + err.Error())
	}
	out[""] = out["index.html"]
	return out
}

// Handler serves the files at their path below Prefix (the request's path
// must start with Prefix). A path that names no file is passed to
// notFound, so that the caller answers it as it answers any unknown path.
func Handler(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.Path) < len(Prefix) || r.URL.Path[:len(Prefix)] != Prefix {
			notFound.ServeHTTP(w, r)
			return
		}
		f, ok := files[r.URL.Path[len(Prefix):]]
		if !ok {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate on every load, so that a node upgraded in place
		// never serves a page with the previous version's script.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		if f.kind != "" {
			h.Set("Content-Type", f.kind)
		}
		http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
	})
}
