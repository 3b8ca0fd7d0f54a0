package lease

import (
	"context"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
)

// A blocking acquire whose leader term ends while it waits has a committed
// place in the queue that the next leader keeps and may grant: its outcome
// is unknown (504), not "nothing happened" (503).
func TestAcquire_LeadershipLostWhileQueuedIsOutcomeUnknown(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.startTerm()
	holder, waiter := tn.session(0, time.Minute), tn.session(0, time.Minute)
	if err := tn.tryAcquire(holder, "q"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tn.n.Acquire(context.Background(), "q", api.AcquireRequest{Session: waiter, Wait: api.Duration(time.Minute)})
		done <- err
	}()
	waitFor(t, 5*time.Second, "the waiter to be queued", func() bool { return queued(tn.n.fsm, "q", waiter) })
	tn.endTerm()
	select {
	case err := <-done:
		if code := api.CodeOf(err); code != api.CodeTimeout {
			t.Fatalf("acquire queued when leadership was lost = %v (code %q), want code %q", err, code, api.CodeTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued acquire did not return after the term ended")
	}
	if !queued(tn.n.fsm, "q", waiter) {
		t.Fatal("the waiter left the queue; the next leader could not grant it")
	}
}
