package traffic_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// TestWatchHold_EndsWhenTheWorkerGivesItUp checks that a holding given up
// by Unlock or Resign ends at the moment the worker gave it up, however
// late the goroutine watching Lost runs: a belief recorded as lasting past
// the release would overlap the next holder's grant and fail lease timing
// for nothing.
func TestWatchHold_EndsWhenTheWorkerGivesItUp(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorder()
	srv := httptest.NewServer(&sessionServer{rec: rec, ttl: 10 * time.Second, acks: 100})
	defer srv.Close()
	tr := traffic.New(traffic.Config{Endpoints: []string{srv.URL}, Recorder: rec, TTL: 10 * time.Second})
	w := tr.NewWorker([]string{"l"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := w.Session(ctx)
	if s == nil {
		t.Fatal("no session")
	}
	lost := make(chan struct{})
	w.WatchHold(ctx, "l", 7, lost, s)
	at := rec.Now()
	w.GiveUp("l", at)
	time.Sleep(50 * time.Millisecond) // the watcher sees Lost close late
	close(lost)
	tr.Wait()
	holds := rec.Holds()
	if len(holds) != 1 {
		t.Fatalf("recorded %d holds, want 1", len(holds))
	}
	if holds[0].To != at {
		t.Errorf("the hold ends at %s, want %s, when the worker gave it up", history.Seconds(holds[0].To), history.Seconds(at))
	}
}
