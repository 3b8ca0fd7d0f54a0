package classic

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// settleLimit bounds the virtual time a Sim scenario may take to settle.
const settleLimit = 60 * time.Second

// mustNewSim builds a Sim or fails the test.
func mustNewSim(t *testing.T, cfg SimConfig) *Sim {
	t.Helper()
	s, err := NewSim(cfg)
	if err != nil {
		t.Fatalf("NewSim: %v", err)
	}
	return s
}

// fixedDelay makes every message take exactly one millisecond, so that a
// scenario's message count does not depend on the seed.
func fixedDelay(cfg SimConfig) SimConfig {
	cfg.MinDelay, cfg.MaxDelay = time.Millisecond, time.Millisecond
	return cfg
}

// mustSettle runs s until it settles, or fails the test with every node's
// view.
func mustSettle(t *testing.T, s *Sim) time.Duration {
	t.Helper()
	at, ok := s.Settle(settleLimit)
	if !ok {
		t.Fatalf("not settled after %v: %s", settleLimit, describe(s))
	}
	return at
}

// highestLiving returns the running node of highest rank.
func highestLiving(s *Sim) string {
	living := s.Living()
	return living[len(living)-1]
}

// describe prints every node's view, for failure messages.
func describe(s *Sim) string {
	var b strings.Builder
	for _, id := range s.IDs() {
		if !s.Up(id) {
			fmt.Fprintf(&b, "%s:down ", id)
			continue
		}
		st := s.Stats(id)
		fmt.Fprintf(&b, "%s:%s/%d ok=%v busy=%v ", id, st.Coordinator, st.Epoch, st.OK, st.InElection)
	}
	fmt.Fprintf(&b, "inflight=%d now=%v", s.inflight, s.Now())
	return b.String()
}

// triangular returns 1 + 2 + ... + k.
func triangular(k int) uint64 {
	if k <= 0 {
		return 0
	}
	return uint64(k * (k + 1) / 2)
}

// sidesSettled returns a condition for RunUntil: every side of a
// partition agrees on a coordinator of its own side, and no election
// message is in flight.
func sidesSettled(s *Sim, sides ...[]string) func() bool {
	return func() bool {
		if s.inflight > 0 {
			return false
		}
		for _, side := range sides {
			v, ok := s.Agreement(side...)
			if !ok || !slices.Contains(side, v.Coordinator) {
				return false
			}
		}
		return true
	}
}
