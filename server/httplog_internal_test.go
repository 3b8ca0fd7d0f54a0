package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// records keeps the log records a handler receives.
type records struct {
	mu   sync.Mutex
	msgs map[slog.Level][]string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[rec.Level] = append(r.msgs[rec.Level], rec.Message)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) count(level slog.Level, prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs[level] {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestHTTPServer_RefusedHandshakesDoNotFloodTheLog: 300 clients that
// speak plain text to the HTTPS port make one warning (per warnEvery) in
// the structured log, and a debug line each.
func TestHTTPServer_RefusedHandshakesDoNotFloodTheLog(t *testing.T) {
	rec := &records{msgs: map[slog.Level][]string{}}
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.Config = newHTTPServer(http.NotFoundHandler(), slog.New(rec))
	ts.StartTLS()
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "https://")
	const n = 300
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, c) // the server closes it after the failed handshake
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.count(slog.LevelDebug, "TLS handshake refused") < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := rec.count(slog.LevelDebug, "TLS handshake refused"); got != n {
		t.Errorf("%d debug lines for %d refused handshakes", got, n)
	}
	if got := rec.count(slog.LevelWarn, "TLS handshake on the API port refused"); got < 1 || got > 3 {
		t.Errorf("%d warnings for %d refused handshakes, want one per %v", got, n, warnEvery)
	}
	if got := rec.count(slog.LevelWarn, ""); got > 3 {
		t.Errorf("%d warnings in all", got)
	}
}
