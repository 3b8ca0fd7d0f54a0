package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/lease"
)

// soleElector names one node coordinator for good.
type soleElector struct{ id string }

func (e soleElector) Coordinator() (string, uint64, bool) { return e.id, 1, true }

// benchServer returns the HTTP API of a node that coordinates alone
// (nothing to replicate, so that the setup is quick) and has n sessions.
func benchServer(b *testing.B, n int) (*lease.Node, *httpapi.Server) {
	b.Helper()
	cfg := lease.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.PeerAddr = "n1", b.TempDir(), "127.0.0.1:1"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	node, err := lease.NewLocal(cfg, lease.Local{Elector: soleElector{cfg.ID}, Members: map[string]string{cfg.ID: "http://127.0.0.1:1"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := node.Open(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = node.Abort() })
	ctx := context.Background()
	waitReady(b, ctx, node)
	for range n {
		// A busy node may let its master lease lapse for a moment: wait
		// for it and try again.
		for try := 0; ; try++ {
			_, err := node.CreateSession(ctx, api.CreateSessionRequest{TTL: api.Duration(api.MaxTTL)})
			if err == nil {
				break
			}
			if api.CodeOf(err) != api.CodeNoLeader || try == 100 {
				b.Fatal(err)
			}
			waitReady(b, ctx, node)
		}
	}
	return node, httpapi.New(httpapi.Config{Service: node, Logger: cfg.Logger})
}

// waitReady waits until node serves under its master lease.
func waitReady(b *testing.B, ctx context.Context, node *lease.Node) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Second); node.Ready(ctx) != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the node does not serve")
		}
	}
}

// BenchmarkListSessions measures GET /v1/sessions at 100k sessions, read
// from the node's state and encoded (the client's decoding is not timed):
// one request as a stale and as a default read, which the leader answers
// only if its master lease still holds when the list is read
// (no_leader/op counts the answers 503), and every page of the list,
// following the cursor, 10000 sessions a page.
func BenchmarkListSessions(b *testing.B) {
	node, srv := benchServer(b, 100_000)
	for _, bm := range []struct {
		name, query string
		all         bool
	}{
		{"page/stale", "?stale", false},
		{"page/default", "", false},
		{"all/stale", "?stale&limit=10000", true},
	} {
		b.Run(bm.name, func(b *testing.B) {
			ctx := context.Background()
			refused, pages, sessions := 0, 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				waitReady(b, ctx, node)
				b.StartTimer()
				for after := ""; ; {
					q := bm.query
					if after != "" {
						q += "&after=" + after
					}
					w := httptest.NewRecorder()
					srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/sessions"+q, nil))
					b.StopTimer()
					if w.Code == http.StatusServiceUnavailable {
						refused++
						b.StartTimer()
						break
					}
					var l struct {
						Sessions []json.RawMessage
						Next     string
					}
					if err := json.Unmarshal(w.Body.Bytes(), &l); w.Code != http.StatusOK || err != nil || len(l.Sessions) == 0 {
						b.Fatal(w.Code, err, len(l.Sessions))
					}
					pages++
					sessions += len(l.Sessions)
					b.StartTimer()
					if !bm.all || l.Next == "" {
						break
					}
					after = l.Next
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(refused)/float64(b.N), "no_leader/op")
			b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
			b.ReportMetric(float64(sessions)/float64(b.N), "sessions/op")
		})
	}
}
