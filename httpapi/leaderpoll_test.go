package httpapi

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many waiters share one poll: the view is read once per tick whatever
// their number, they wake when it changes (and only then while a leader is
// known), and the poll stops once nobody waits.
func TestLeaderPoll_OnePollForEveryWaiter(t *testing.T) {
	var polls atomic.Int64
	var mu sync.Mutex
	cur := LeaderAddr{ID: "n1"}
	p := &leaderPoll{interval: 5 * time.Millisecond, leader: func() (bool, LeaderAddr) {
		polls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		return false, cur
	}}
	const waiters = 200
	var woken atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.join()
			defer p.leave()
			for {
				ch := p.next()
				select {
				case <-ch:
					woken.Add(1)
				case <-stop:
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // about 20 ticks, the view unchanged
	if n := polls.Load(); n > 40 {
		t.Errorf("%d polls in 20 ticks for %d waiters: not one poll for all", n, waiters)
	}
	if n := woken.Load(); n != 0 {
		t.Errorf("%d wake-ups while the view stood still", n)
	}
	mu.Lock()
	cur = LeaderAddr{ID: "n2"}
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for woken.Load() < waiters && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := woken.Load(); n < waiters {
		t.Errorf("a change of leader woke %d of %d waiters", n, waiters)
	}
	close(stop)
	wg.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poll still runs with nobody waiting")
		}
		time.Sleep(time.Millisecond)
	}
	before := polls.Load()
	time.Sleep(30 * time.Millisecond)
	if polls.Load() != before {
		t.Errorf("polled with nobody waiting")
	}
}

// While no leader is known, every tick wakes the waiters, so that each can
// tell how long it has been.
func TestLeaderPoll_NoLeaderWakesEveryTick(t *testing.T) {
	p := &leaderPoll{interval: 5 * time.Millisecond, leader: func() (bool, LeaderAddr) { return false, LeaderAddr{} }}
	p.join()
	defer p.leave()
	for range 3 {
		select {
		case <-p.next():
		case <-time.After(5 * time.Second):
			t.Fatal("no wake-up while no leader is known")
		}
	}
}
