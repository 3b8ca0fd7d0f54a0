package traffic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestAbandonOne_EndsAtTheServersPromise checks that an abandoned
// session is recorded as ending no earlier than its create was sent + TTL
// (the server counts the TTL from the create's arrival, later) and no
// later than the create's arrival + TTL.
func TestAbandonOne_EndsAtTheServersPromise(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorder()
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any
		switch {
		case r.URL.Path == "/v1/sessions":
			arrived.Store(rec.Now())
			v = api.Session{ID: "abandoned-a", TTL: api.Duration(time.Second)}
		case strings.HasSuffix(r.URL.Path, "/acquire"):
			v = api.AcquireResponse{Token: 5}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}))
	defer srv.Close()
	tr := traffic.New(traffic.Config{Endpoints: []string{srv.URL}, Recorder: rec, TTL: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := rec.Now()
	tr.AbandonOne(ctx, srv.URL)
	var end *history.Op
	for _, op := range rec.Ops() {
		if op.Kind == history.End {
			end = &op
		}
	}
	if end == nil || arrived.Load() == 0 {
		t.Fatalf("no End recorded, or no create arrived: %+v", rec.Ops())
	}
	// The leader measures the TTL on a clock that may run fast by the drift
	// bound: the promise is that much shorter in real time.
	promised := int64(float64(time.Second) * (1 - traffic.DriftBound(0)))
	if lo, hi := before+promised, arrived.Load()+promised; end.Call < lo || end.Call > hi {
		t.Fatalf("End from %s, want within [%s, %s]", history.Seconds(end.Call), history.Seconds(lo), history.Seconds(hi))
	}
}
