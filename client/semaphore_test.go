package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// A semaphore of 2: two Mutexes hold it at once, each with a token of its
// own that checks as current; a third waits, and gets the slot the first
// gives back, in arrival order; a Mutex with another limit is refused;
// Lost closes on Unlock and when the holder's session ends.
func TestSemaphore_SlotsTokensAndLost(t *testing.T) {
	c := servertest.New(t, 3)
	cl := mustClient(t, c.URLs()...)
	var ss []*client.Session
	var ms []*client.Mutex
	for range 3 {
		ss = append(ss, mustSession(t, cl))
		ms = append(ms, client.NewSemaphore(ss[len(ss)-1], "pool", 2))
	}
	for _, m := range ms[:2] {
		if err := m.Lock(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if ms[0].Token() == 0 || ms[1].Token() <= ms[0].Token() || ms[0].Limit() != 2 {
		t.Fatalf("tokens %d, %d, limit %d", ms[0].Token(), ms[1].Token(), ms[0].Limit())
	}
	for _, m := range ms[:2] {
		if ok, err := cl.CheckToken(ctxT(t, 5*time.Second), "pool", m.Token()); err != nil || !ok {
			t.Fatalf("token %d of a holder: %v %v", m.Token(), ok, err)
		}
	}
	if err := ms[2].TryLock(ctxT(t, 5*time.Second)); !errors.Is(err, client.ErrLockHeld) {
		t.Fatalf("TryLock of a full semaphore = %v, want ErrLockHeld", err)
	}
	other := client.NewMutex(mustSession(t, cl), "pool", client.Limit(3))
	if err := other.TryLock(ctxT(t, 5*time.Second)); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("TryLock with another limit = %v, want ErrBadRequest", err)
	}
	got := make(chan error, 1)
	go func() { got <- ms[2].Lock(ctxT(t, 30*time.Second)) }()
	waitFor(t, 5*time.Second, "the third to queue", func() bool {
		l, _ := cl.Lock(context.Background(), "pool", client.Default)
		return len(l.Waiters) == 1 && l.Limit == 2
	})
	first := ms[0].Token()
	if err := ms[0].Unlock(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ms[0].Lost():
	default:
		t.Fatal("Lost not closed by Unlock")
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if ms[2].Token() <= ms[1].Token() || !ms[1].Held() {
		t.Fatalf("third's token %d after %d; second held %v", ms[2].Token(), ms[1].Token(), ms[1].Held())
	}
	if ok, _ := cl.CheckToken(ctxT(t, 5*time.Second), "pool", first); ok {
		t.Fatalf("the released token %d still checks", first)
	}
	// The second holder's session ends: only its holding is lost.
	lost := ms[1].Lost()
	if err := ss[1].Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed when the holder's session ended")
	}
	if !ms[2].Held() {
		t.Fatal("the third lost its slot with the second's session")
	}
}
