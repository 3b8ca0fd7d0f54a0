package lease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// Sessions the leader creates keep a bounded table of request numbers: a
// session that takes and lets go of many locks leaves a snapshot the size
// it had, and a late copy of its first acquire is still not applied.
func TestCreateSession_BoundsRequestNumbers(t *testing.T) {
	tn := newTimedNode(t, NewSkewClock())
	tn.startTerm()
	ctx := context.Background()
	s := tn.session(0, time.Hour)
	if got, _ := tn.n.fsm.Session(s); got.SeqWindow != fsm.DefaultSeqWindow {
		t.Fatalf("session window %d, want %d", got.SeqWindow, fsm.DefaultSeqWindow)
	}
	cycle := func(name string, seq uint64) {
		t.Helper()
		if _, err := tn.n.Acquire(ctx, name, api.AcquireRequest{Session: s, Seq: seq}); err != nil {
			t.Fatal(err)
		}
		if err := tn.n.Release(ctx, name, api.SessionRequest{Session: s, Seq: seq + 1}); err != nil {
			t.Fatal(err)
		}
	}
	cycle("first", 1)
	seq := uint64(3)
	for i := range 2 * fsm.DefaultSeqWindow {
		cycle(fmt.Sprintf("warm/%03d", i), seq)
		seq += 2
	}
	before, _ := tn.n.fsm.Snapshot()
	for i := range 500 {
		cycle(fmt.Sprintf("jobs/%03d", i), seq)
		seq += 2
	}
	after, _ := tn.n.fsm.Snapshot()
	if len(after) > len(before)+64 { // the applied indexes grow by a few digits
		t.Fatalf("snapshot grew from %d to %d bytes over 500 names the session let go of", len(before), len(after))
	}
	if _, err := tn.n.Acquire(ctx, "first", api.AcquireRequest{Session: s, Seq: 1}); api.CodeOf(err) != api.CodeRepeated {
		t.Fatalf("late copy of the first acquire = %v, want request_repeated", err)
	}
}
