package traffic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// sessionServer is a stand-in for lockd's session endpoints: it creates
// one session, acknowledges its first acks keepalives and refuses the
// rest (no leader), so that the client library loses the session. It notes,
// on the history's clock, when each acknowledged request arrived and when
// its answer was written.
type sessionServer struct {
	rec  *history.Recorder
	ttl  time.Duration
	acks int

	mu       sync.Mutex
	arrived  []int64 // create, then each acknowledged keepalive
	answered []int64
	deleted  int64 // arrival of the destroy
}

func (f *sessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := f.rec.Now()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/sessions":
		f.arrived, f.answered = append(f.arrived, now), append(f.answered, f.rec.Now())
		reply(http.StatusCreated, api.Session{ID: "session-a", TTL: api.Duration(f.ttl)})
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/keepalive"):
		if len(f.arrived) > f.acks {
			reply(http.StatusServiceUnavailable, api.Error{Code: api.CodeNoLeader, Message: "no leader"})
			return
		}
		f.arrived, f.answered = append(f.arrived, now), append(f.answered, f.rec.Now())
		reply(http.StatusOK, api.KeepAliveResponse{ID: "session-a", TTL: api.Duration(f.ttl)})
	case r.Method == "DELETE":
		f.deleted = now
		reply(http.StatusNotFound, api.Error{Code: api.CodeSessionExpired, Message: "expired"})
	default:
		reply(http.StatusNotFound, api.Error{Code: "not_found", Message: r.URL.Path})
	}
}

// lostSessionEnd runs a worker whose session the library loses after acks
// acknowledged keepalives, and returns the End the worker records, the
// server's promise (the last acknowledged request's arrival + TTL: the
// request was sent no later) and a lower bound of the send time of that
// request + TTL.
func lostSessionEnd(t *testing.T, ttl time.Duration, acks int) (end history.Op, promise, floor int64) {
	t.Helper()
	rec := history.NewRecorder()
	fs := &sessionServer{rec: rec, ttl: ttl, acks: acks}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	tr := traffic.New(traffic.Config{Endpoints: []string{srv.URL}, Recorder: rec, TTL: ttl})
	w := tr.NewWorker([]string{"l"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := rec.Now()
	s := w.Session(ctx)
	if s == nil {
		t.Fatal("no session")
	}
	select {
	case <-s.Done():
	case <-time.After(3 * ttl):
		t.Fatal("the library never lost the session")
	}
	w.EndSession()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.arrived) != acks+1 {
		t.Fatalf("%d requests acknowledged, want %d", len(fs.arrived), acks+1)
	}
	last := len(fs.arrived) - 1
	// The leader measures the TTL on a clock that may run fast by the drift
	// bound: the promise is that much shorter in real time.
	promised := int64(float64(ttl) * (1 - traffic.DriftBound(0)))
	promise = fs.arrived[last] + promised
	// A keepalive is sent at the earliest TTL/3 after the answer before it.
	floor = before + promised
	if last > 0 {
		floor = fs.answered[last-1] + int64(ttl/3) + promised
	}
	ops := rec.Ops()
	if len(ops) != 1 || ops[0].Kind != history.End || ops[0].Lock != "l" {
		t.Fatalf("recorded %+v, want one End of lock l", ops)
	}
	// A destroy releases the session's locks at once: it must not reach
	// the server before the End it belongs to.
	if fs.deleted != 0 && fs.deleted < ops[0].Call {
		t.Errorf("the destroy arrived at %s, before the End from %s", history.Seconds(fs.deleted), history.Seconds(ops[0].Call))
	}
	return ops[0], promise, floor
}

// TestEndSession_LostSessionEndsAtTheServersPromise checks that a session
// the library lost is recorded as ending no earlier than the server
// promised (the send time of the last keepalive it acknowledged + TTL),
// and no later: the library's own deadline is earlier by its safety margin,
// which must not widen what the checkers accept.
func TestEndSession_LostSessionEndsAtTheServersPromise(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	for _, acks := range []int{0, 2} {
		end, promise, floor := lostSessionEnd(t, ttl, acks)
		if end.Status != history.Unknown || end.Return != history.Infinity {
			t.Errorf("acks %d: End %+v, want an expiry with no completion", acks, end)
		}
		if end.Call > promise {
			t.Errorf("acks %d: End from %s, after the server's promise %s", acks,
				history.Seconds(end.Call), history.Seconds(promise))
		}
		if end.Call < floor {
			t.Errorf("acks %d: End from %s, before the server's promise (no earlier than %s)", acks,
				history.Seconds(end.Call), history.Seconds(floor))
		}
	}
}

// TestEndSession_EarlyExpiryIsCaught feeds the checkers a lost session's
// End as the worker records it, with another session acquiring the lock
// before or after the server's promise.
func TestEndSession_EarlyExpiryIsCaught(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	end, promise, _ := lostSessionEnd(t, ttl, 0)
	created := promise - int64(ttl)
	ms := int64(time.Millisecond)
	a := history.Op{Lock: "l", Kind: history.Acquire, Session: "session-a", Token: 5, Status: history.OK,
		Call: created + 10*ms, Return: created + 20*ms}
	tests := []struct {
		name string
		b    history.Op
		want int
	}{
		// The server expired A at 0.9 x TTL and granted B at once.
		{"granted at 0.9 x TTL", history.Op{Lock: "l", Kind: history.Acquire, Session: "session-b", Token: 9,
			Status: history.OK, Call: created + 900*ms, Return: created + 910*ms}, 1},
		{"granted at 0.95 x TTL", history.Op{Lock: "l", Kind: history.Acquire, Session: "session-b", Token: 9,
			Status: history.OK, Call: created + 940*ms, Return: created + 950*ms}, 1},
		{"granted after the promise", history.Op{Lock: "l", Kind: history.Acquire, Session: "session-b", Token: 9,
			Status: history.OK, Call: promise + ms, Return: promise + 10*ms}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := []history.Op{a, end, tt.b}
			for i := range ops {
				ops[i].ID, ops[i].Client = int64(i+1), i
			}
			v := validate.CheckLinearizable(ops, nil, 10*time.Second, t.TempDir())
			if v.Violations != tt.want {
				t.Fatalf("linearizability: %d violations, want %d (End from %s): %v", v.Violations, tt.want,
					history.Seconds(end.Call), v.Details)
			}
		})
	}
}

// TestEndSession_LateGrantIsTimed checks that lease timing counts a grant
// that returned after the library gave its session up but before the
// server could have expired it: the server granted it to a live session,
// and here while another client believed it held the lock.
func TestEndSession_LateGrantIsTimed(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	end, promise, _ := lostSessionEnd(t, ttl, 0)
	created := promise - int64(ttl)
	ms := int64(time.Millisecond)
	other := history.Hold{Lock: "l", Session: "session-c", Token: 3, From: created + 100*ms, To: created + 3*int64(ttl)}
	tests := []struct {
		name string
		at   int64
		want int
	}{
		{"before the library's deadline", created + 500*ms, 1},
		{"between the library's deadline and the promise", created + 950*ms, 1},
		{"after the promise", promise + 10*ms, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			retry := history.Op{ID: 2, Lock: "l", Kind: history.Acquire, Session: "session-a", Token: 7,
				Status: history.OK, Call: created + 10*ms, Return: tt.at}
			v := validate.CheckLeaseTiming([]history.Op{end, retry}, []history.Hold{other})
			if v.Violations != tt.want {
				t.Fatalf("lease timing: %d violations, want %d (End from %s): %v", v.Violations, tt.want,
					history.Seconds(end.Call), v.Details)
			}
		})
	}
}
