package lease

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The master lease runs for the quorum's smallest promise shrunk by the
// clock-drift bound, minus the margin: a leader whose clock runs
// MaxClockDrift faster than a follower's must still end its lease before
// that follower's promise ends. Exact values: a drift of 1/4 and whole
// milliseconds make every product exact in float64.
func TestConfig_LeaseForShrinksThePromiseByTheDrift(t *testing.T) {
	c := validConfig()
	c.MaxClockDrift, c.LeaseMargin = 0.25, 30*time.Millisecond
	for _, tc := range []struct{ promise, want time.Duration }{
		{400 * time.Millisecond, 270 * time.Millisecond}, // 400 x 3/4 - 30
		{800 * time.Millisecond, 570 * time.Millisecond}, // 800 x 3/4 - 30
		{40 * time.Millisecond, 0},                       // 40 x 3/4 - 30: nothing left
	} {
		if got := c.leaseFor(tc.promise); got != tc.want {
			t.Errorf("leaseFor(%v) with drift %v, margin %v = %v, want %v = promise x (1 - drift) - margin",
				tc.promise, c.MaxClockDrift, c.LeaseMargin, got, tc.want)
		}
	}
	c.HeartbeatTimeout = 400 * time.Millisecond
	if got := c.leaseDuration(); got != 270*time.Millisecond {
		t.Errorf("leaseDuration with HeartbeatTimeout 400ms = %v, want 270ms", got)
	}
}

// lease() on a Raft leader whose followers promise a known time through
// the real lease exchange: the lease ends exactly at start + promise x (1 -
// MaxClockDrift) - LeaseMargin, never later. A lease computed without the
// drift factor (start + promise - margin) outlives a follower whose clock
// runs slower than the leader's by up to MaxClockDrift.
func TestPromise_LeaseEndAppliesDriftToTheQuorumsPromise(t *testing.T) {
	const (
		promised = 400 * time.Millisecond
		drift    = 0.25
		margin   = 30 * time.Millisecond
		want     = 270 * time.Millisecond // 400ms x (1 - 0.25) - 30ms, exact
	)
	c := newRaceClusterWith(t, raceOptions{
		config: func(cfg *Config) { cfg.MaxClockDrift, cfg.LeaseMargin = drift, margin },
		// Every follower answers the same promise, so that whichever
		// answers first makes the quorum's smallest one.
		promise: func(e *raftEngine) promiser {
			return func(uint64, string) time.Duration {
				if e.raft.State() != raft.Follower {
					return 0
				}
				return promised
			}
		},
	})
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		l := c.leader()
		if l < 0 {
			await(t, 10*time.Second, "a leader", func() bool { return c.leader() >= 0 })
			continue
		}
		e := c.nodes[l].eng
		start := time.Now()
		end, err := e.lease(e.raft.CurrentTerm(), start)
		if err != nil {
			lastErr = err // leadership moved between the reads: ask again
			continue
		}
		if got := end.Sub(start); got != want {
			t.Fatalf("lease from followers' promises of %v with MaxClockDrift %v and LeaseMargin %v ends at start + %v, want start + %v (promise x (1 - drift) - margin)",
				promised, drift, margin, got, want)
		}
		return
	}
	t.Fatalf("no lease round succeeded in 5 attempts: %v", lastErr)
}
