package lease

import (
	"sync/atomic"
	"testing"
	"time"
)

// switchingEngine leads in term 1 until told otherwise.
type switchingEngine struct {
	engine
	leads atomic.Bool
	term  atomic.Uint64
}

func (e *switchingEngine) state() (bool, uint64) { return e.leads.Load(), e.term.Load() }

// TestLeaderTerm_LeaseValidAsksRaftAtEveryUse guards A6: a leader that has
// stepped down may vote for another candidate at once, and its lease
// counted on its own vote, so the lease is good only while Raft says this
// node leads in the lease's term, however much time the lease has left.
func TestLeaderTerm_LeaseValidAsksRaftAtEveryUse(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	eng := &switchingEngine{}
	eng.leads.Store(true)
	eng.term.Store(1)
	n := &Node{cfg: validConfig(), clock: clock, eng: eng}
	term := newLeaderTerm(n, 1)
	term.mu.Lock()
	term.ready, term.leaseUntil = true, clock.Now().Add(time.Hour)
	term.mu.Unlock()
	if !term.leaseValid() {
		t.Fatal("a leader of its term with an hour of lease left does not hold it")
	}
	eng.term.Store(2) // a later term, still "leading" in Raft's state
	if term.leaseValid() {
		t.Fatal("the lease of term 1 holds in term 2")
	}
	eng.term.Store(1)
	eng.leads.Store(false) // stepped down in the lease's term
	if term.leaseValid() {
		t.Fatal("the lease holds after Raft made the node a follower")
	}
}
