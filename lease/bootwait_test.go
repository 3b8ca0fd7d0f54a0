package lease

import (
	"path/filepath"
	"testing"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// A node restarted with a shorter heartbeat timeout still waits out the
// longer promise it may have made before.
func TestBootWait_KeepsThePromiseOfThePreviousRun(t *testing.T) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	for _, step := range []struct {
		hb, atLeast time.Duration
	}{
		{60 * time.Millisecond, 60 * time.Millisecond}, // first start: its own timeout
		{10 * time.Millisecond, 60 * time.Millisecond}, // shorter now: the earlier promise still runs
		{10 * time.Millisecond, 10 * time.Millisecond},
	} {
		start := time.Now()
		if err := bootWait(store, step.hb); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < step.atLeast {
			t.Fatalf("boot wait with heartbeat timeout %v took %v, want at least %v", step.hb, took, step.atLeast)
		}
	}
}
