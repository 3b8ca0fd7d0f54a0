package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// A node serves at most Config.MaxBlockingQueries blocking queries at once:
// one more is answered too_many_requests with a Retry-After and does not
// wait, reads without a wait go on being served, and the place of a query
// that returned is free again.
func TestBlockingQueries_BoundedWith429(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.n.cfg.MaxBlockingQueries = 2
	tn.startTerm()
	s := tn.session(0, time.Hour)
	if err := tn.tryAcquire(s, "x"); err != nil {
		t.Fatal(err)
	}
	idx := tn.n.fsm.Lock("x").ModifyIndex
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	block := api.ReadOptions{Index: idx, Wait: time.Hour}
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := tn.n.Lock(ctx, "x", block)
			done <- err
		}()
	}
	waitFor(t, 5*time.Second, "two blocking queries to wait", func() bool { return tn.n.blocking.Load() == 2 })

	_, err := tn.n.Lock(ctx, "x", block)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeTooMany || e.RetryAfter <= 0 {
		t.Fatalf("third blocking query = %v, want too_many_requests with a Retry-After", err)
	}
	if _, err := tn.n.Election(ctx, "e", block); api.CodeOf(err) != api.CodeTooMany {
		t.Fatalf("blocking query of an election = %v, want too_many_requests", err)
	}
	if l, err := tn.n.Lock(ctx, "x", api.ReadOptions{}); err != nil || l.ModifyIndex != idx {
		t.Fatalf("a read without a wait = %+v, %v", l, err)
	}

	if err := tn.n.Release(ctx, "x", api.SessionRequest{Session: s}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a blocking query woken by the release = %v", err)
		}
	}
	waitFor(t, 5*time.Second, "the places to be given back", func() bool { return tn.n.blocking.Load() == 0 })
	if _, err := tn.n.Lock(ctx, "x", api.ReadOptions{Index: idx, Wait: time.Hour}); err != nil {
		t.Fatalf("a blocking query once the others returned = %v", err)
	}
}
