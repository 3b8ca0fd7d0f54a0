package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

func TestSession_SurvivesLeaderCrash(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	s := mustSession(t, cl, client.WithTTL(3*time.Second), client.WithLockDelay(0))
	m := client.NewMutex(s, "survive")
	if err := m.Lock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	token := m.Token()
	c.Crash(c.WaitLeader())
	// Two TTLs later the session and the lock are still ours: keepalives
	// found the new leader, which gave the session a full TTL.
	time.Sleep(2 * s.TTL())
	if !s.Alive() || !m.Held() || m.Token() != token {
		t.Fatalf("after leader crash: alive %v held %v token %d (was %d); err %v", s.Alive(), m.Held(), m.Token(), token, s.Err())
	}
	l, err := cl.Lock(ctxT(t, 10*time.Second), "survive", client.Default)
	if err != nil || len(l.Holders) != 1 || l.Holders[0].Session != s.ID() || l.Holders[0].Token != token {
		t.Fatalf("server view after crash: %+v %v", l, err)
	}
}

func TestMutex_FIFOHandOverOnUnlock(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	var ms []*client.Mutex
	for range 3 {
		ms = append(ms, client.NewMutex(mustSession(t, cl), "fifo"))
	}
	if err := ms[0].Lock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	for i := 1; i < 3; i++ {
		go func() {
			if err := ms[i].Lock(ctxT(t, 30*time.Second)); err == nil {
				order <- i
			}
		}()
		waitFor(t, 5*time.Second, "queued", func() bool {
			l, _ := cl.Lock(context.Background(), "fifo", client.Default)
			return len(l.Waiters) == i
		})
	}
	prev := ms[0]
	for want := 1; want < 3; want++ {
		tok := prev.Token()
		if err := prev.Unlock(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-prev.Lost():
		default:
			t.Fatal("Lost not closed by Unlock")
		}
		if got := <-order; got != want {
			t.Fatalf("hand-over went to %d, want %d", got, want)
		}
		if ms[want].Token() <= tok {
			t.Fatalf("token %d after %d", ms[want].Token(), tok)
		}
		prev = ms[want]
	}
}

func TestMutex_HandOverOnSessionLoss(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	s1 := mustSession(t, cl, client.WithLockDelay(0))
	m1 := client.NewMutex(s1, "loss")
	if err := m1.Lock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	m2 := client.NewMutex(mustSession(t, cl), "loss")
	if err := m2.TryLock(ctxT(t, 5*time.Second)); !errors.Is(err, client.ErrLockHeld) {
		t.Fatalf("TryLock of a held lock = %v, want ErrLockHeld", err)
	}
	got := make(chan error, 1)
	go func() { got <- m2.Lock(ctxT(t, 30*time.Second)) }()
	s1.Close()
	select {
	case <-m1.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("m1.Lost not closed when its session ended")
	}
	if err := <-got; err != nil {
		t.Fatalf("m2.Lock after the holder's session ended: %v", err)
	}
	if m1.Held() || m1.Token() != 0 || !m2.Held() {
		t.Fatalf("m1 held %v token %d; m2 held %v", m1.Held(), m1.Token(), m2.Held())
	}
}

func TestElection_CampaignResignObserve(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	e1 := client.NewElection(mustSession(t, cl), "svc")
	e2 := client.NewElection(mustSession(t, cl), "svc")
	if _, err := e1.Leader(ctxT(t, 5*time.Second)); !errors.Is(err, client.ErrNoElectionLeader) {
		t.Fatalf("Leader of an empty election = %v", err)
	}
	obs := cl.Observe(ctxT(t, 30*time.Second), "svc")
	if l, ok := <-obs; !ok || l.Session != "" {
		t.Fatalf("first observation %+v, want no leader", l)
	}
	if err := e1.Campaign(ctxT(t, 10*time.Second), "a:1"); err != nil {
		t.Fatal(err)
	}
	if l, ok := <-obs; !ok || l.Value != "a:1" || l.Token != e1.Token() {
		t.Fatalf("observed %+v, want a:1 with token %d", l, e1.Token())
	}
	if err := e1.Proclaim(ctxT(t, 5*time.Second), "a:2"); err != nil {
		t.Fatal(err)
	}
	if l := <-obs; l.Value != "a:2" {
		t.Fatalf("observed %+v after proclaim", l)
	}
	if err := e2.Proclaim(ctxT(t, 5*time.Second), "x"); !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("proclaim by a non-leader = %v", err)
	}
	won := make(chan error, 1)
	go func() { won <- e2.Campaign(ctxT(t, 30*time.Second), "b:1") }()
	time.Sleep(200 * time.Millisecond) // let the second campaign queue; the order is not what is tested
	if err := e1.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil || !e2.Leading() || e1.Leading() {
		t.Fatalf("after resign: campaign err %v, e2 leading %v, e1 leading %v", err, e2.Leading(), e1.Leading())
	}
	for l := range obs {
		if l.Value == "b:1" {
			return
		}
	}
	t.Fatal("observer never saw the new leader")
}

// TestSession_LocalDeadlineBeforeServerExpiry cuts a client off from the
// cluster and checks that its session reports loss before another session
// can acquire its lock.
func TestSession_LocalDeadlineBeforeServerExpiry(t *testing.T) {
	c := servertest.New(t, 3)
	var cut atomic.Bool
	target, _ := url.Parse(c.URL(c.WaitLeader()))
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				conn.Close() // unreachable: the connection just dies
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	victim := mustSession(t, mustClient(t, front.URL), client.WithTTL(2*time.Second), client.WithLockDelay(0))
	m := client.NewMutex(victim, "deadline")
	if err := m.Lock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	other := client.NewMutex(mustSession(t, mustClient(t, c.URLs()...)), "deadline")
	cut.Store(true)

	doneCh := make(chan time.Time, 1)
	go func() { <-victim.Done(); doneCh <- time.Now() }()
	if err := other.Lock(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	acquiredAt := time.Now()
	var doneAt time.Time
	select {
	case doneAt = <-doneCh:
	default: // not done yet: the check below fails
	}
	if doneAt.IsZero() || !doneAt.Before(acquiredAt) {
		t.Fatalf("victim's Done at %v, other acquired at %v: the local deadline was not conservative", doneAt, acquiredAt)
	}
	if !errors.Is(victim.Err(), client.ErrSessionLost) {
		t.Fatalf("victim.Err() = %v, want ErrSessionLost", victim.Err())
	}
	t.Logf("victim gave up %v before the other session acquired", acquiredAt.Sub(doneAt))
}

func TestClient_RetriesAcrossDeadEndpoint(t *testing.T) {
	c := servertest.New(t, 3)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	cl := mustClient(t, append([]string{deadURL}, c.URLs()...)...)
	s := mustSession(t, cl)
	if err := client.NewMutex(s, "x").TryLock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("TryLock with a dead first endpoint: %v", err)
	}
}

// A client whose first endpoint is a follower goes to the leader directly
// once an answer has named it: the follower forwards only the first
// request.
func TestClient_MovesToTheLeader(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	var viaFollower atomic.Int32
	follower, err := url.Parse(c.URL(c.Follower(leader)))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(follower)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		viaFollower.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()
	cl := mustClient(t, counting.URL, c.URL(leader))
	s := mustSession(t, cl)
	m := client.NewMutex(s, "x")
	for range 5 {
		if err := m.TryLock(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := viaFollower.Load(); n != 1 {
		t.Fatalf("%d requests went through the follower, want 1 (the first)", n)
	}
}

func TestFence_RejectsStaleTokens(t *testing.T) {
	var f client.Fence
	for _, tc := range []struct {
		token uint64
		ok    bool
	}{{5, true}, {5, true}, {7, true}, {6, false}, {7, true}, {8, true}, {1, false}} {
		err := f.Admit("l", tc.token)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, client.ErrStaleToken)) {
			t.Fatalf("Admit(%d) = %v, want ok=%v", tc.token, err, tc.ok)
		}
	}
	if f.Highest("l") != 8 || f.Highest("other") != 0 {
		t.Fatalf("highest = %d", f.Highest("l"))
	}
}

// A Lock whose context is cancelled while it waits in the queue leaves no
// place behind: the server keeps a hung-up waiter queued (so that a retry
// finds its place), and the Mutex's give-back ends it, so the lock is not
// granted later to a session whose caller gave up.
func TestMutex_CancelledLockLeavesTheQueue(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	holder := client.NewMutex(mustSession(t, cl), "q")
	if err := holder.Lock(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	waiter := client.NewMutex(mustSession(t, cl), "q")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	waitFor(t, 5*time.Second, "queued", func() bool {
		l, _ := cl.Lock(context.Background(), "q", client.Default)
		return len(l.Waiters) == 1
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
	}
	waitFor(t, 5*time.Second, "the give-back to end the place", func() bool {
		l, _ := cl.Lock(context.Background(), "q", client.Default)
		return len(l.Waiters) == 0
	})
	if err := holder.Unlock(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if l, _ := cl.Lock(context.Background(), "q", client.Consistent); len(l.Holders) != 0 {
		t.Fatalf("after the holder let go the lock went to %+v, want free", l.Holders)
	}
}

// A node that serves as many blocking queries as it may answers 429
// too_many_requests: nothing was done, so the client asks again, not
// sooner than the Retry-After says.
func TestClient_RetriesTooManyRequests(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":"full","code":"too_many_requests"}`))
			return
		}
		_, _ = w.Write([]byte(`{"name":"e","session":"s","value":"v","token":7,"modify_index":7}`))
	}))
	defer ts.Close()
	l, err := mustClient(t, ts.URL).Election(ctxT(t, 10*time.Second), "e")
	if err != nil || l.Token != 7 || calls.Load() != 2 {
		t.Fatalf("Election after a 429 = %+v, %v after %d calls; want the answer of the second call", l, err, calls.Load())
	}
}

// A write answered 429 quota_exceeded is not asked again: it applied
// nothing, and it fails the same way until the token owns less. The
// error matches ErrQuotaExceeded.
func TestClient_QuotaExceededIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":"over max_keys","code":"quota_exceeded"}`))
	}))
	defer ts.Close()
	_, err := mustClient(t, ts.URL).KV().Put(ctxT(t, 10*time.Second), "k", []byte("v"))
	if !errors.Is(err, client.ErrQuotaExceeded) || calls.Load() != 1 {
		t.Fatalf("Put answered quota_exceeded = %v after %d calls; want ErrQuotaExceeded after 1", err, calls.Load())
	}
}

// KeepAliveSessions renews several sessions in one request, reports the
// ones that are gone, and refuses a request without ids.
func TestClient_KeepAliveSessions(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	a, b := mustSession(t, cl), mustSession(t, cl)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := cl.KeepAliveSessions(ctxT(t, 10*time.Second), a.ID(), b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renewed) != 1 || res.Renewed[0].ID != a.ID() || len(res.Expired) != 1 || res.Expired[0] != b.ID() {
		t.Fatalf("KeepAliveSessions = %+v, want %s renewed and %s expired", res, a.ID(), b.ID())
	}
	if _, err := cl.KeepAliveSessions(ctxT(t, 10*time.Second)); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("KeepAliveSessions of no ids = %v, want ErrBadRequest", err)
	}
}
