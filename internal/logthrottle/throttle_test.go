package logthrottle

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestThrottle_OnePerIntervalAndCountsTheRest(t *testing.T) {
	var now atomic.Int64
	th := New(time.Second)
	th.since = func() time.Duration { return time.Duration(now.Load()) }
	if ok, held := th.Allow(); !ok || held != 0 {
		t.Fatalf("first event: ok=%v held=%d, want true 0", ok, held)
	}
	var wg sync.WaitGroup
	var through atomic.Int64
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := th.Allow(); ok {
				through.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := through.Load(); n != 0 {
		t.Fatalf("%d events let through within the interval", n)
	}
	now.Store(int64(999 * time.Millisecond))
	if ok, _ := th.Allow(); ok {
		t.Fatal("an event let through before the interval ended")
	}
	now.Store(int64(time.Second))
	if ok, held := th.Allow(); !ok || held != 101 {
		t.Fatalf("after the interval: ok=%v held=%d, want true 101", ok, held)
	}
}
