package lease

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The scale benchmarks run a leader term over benchSessions sessions, as
// a leader serving a large fleet has.
const (
	benchSessions = 100_000
	benchTTL      = 10 * time.Second
	// benchDue is the share of the sessions that fall due between two
	// sweeps: 1 in benchDue.
	benchDue = 100
)

func benchID(i int) string { return fmt.Sprintf("%032x", i) }

// benchFSM returns an FSM holding n sessions of benchTTL.
func benchFSM(n int, now time.Time) *fsm.FSM {
	f := fsm.New()
	for i := range n {
		f.ApplyCommand(uint64(i+1), fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: benchID(i), TTL: benchTTL})
	}
	return f
}

// staggeredTerm returns a leader term whose deadline table holds n
// sessions whose deadlines are spread evenly over one TTL ahead of the
// clock, as those of a fleet renewing at random moments are.
func staggeredTerm(n int) (*leaderTerm, *manualClock) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, _ := newTestTerm(clock)
	term.n.fsm = benchFSM(n, clock.Now())
	term.expired() // adopts every session with a full TTL
	step := benchTTL / time.Duration(n)
	for i := range n {
		term.extend(benchID(i), benchTTL)
		clock.advance(step)
	}
	return term, clock
}

// sweep moves the clock on by 1/benchDue of the TTL and runs one sweep;
// then, as if each due session's expiry had committed and a new session
// had taken its place, it renews the due ones with a full TTL, so that the
// next sweep finds as many due.
func sweep(term *leaderTerm, clock *manualClock, timed func(bool)) int {
	clock.advance(benchTTL / benchDue)
	timed(true)
	due := term.expired()
	timed(false)
	term.forget(due...)
	for _, id := range due {
		term.track(id, benchTTL)
	}
	return len(due)
}

// BenchmarkExpirySweep measures one sweep of the leader's session
// deadlines at 100k sessions of which 1% fell due since the last one.
func BenchmarkExpirySweep(b *testing.B) {
	term, clock := staggeredTerm(benchSessions)
	timed := func(on bool) {
		if on {
			b.StartTimer()
		} else {
			b.StopTimer()
		}
	}
	due := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		due += sweep(term, clock, timed)
	}
	b.StopTimer()
	b.ReportMetric(float64(due)/float64(b.N), "due/sweep")
}

// BenchmarkKeepaliveDuringSweeps measures a keepalive's extension of its
// session's deadline at 100k sessions while another goroutine sweeps the
// deadlines as the expiry loop does: every 100 ms (or back to back when a
// sweep takes longer), 1% of the sessions falling due at each. The
// keepalives come one every 100 µs or so, spread over the sweeps, so the
// distribution of their waits shows how much of the time the sweep keeps
// the lock. It reports the mean wait (ns/op), its median, 99th percentile
// and maximum; on a busy machine the maximum is mostly scheduling.
func BenchmarkKeepaliveDuringSweeps(b *testing.B) {
	term, clock := staggeredTerm(benchSessions)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			sweep(term, clock, func(bool) {})
		}
	}()
	waits := make([]time.Duration, 0, b.N)
	var total time.Duration
	id := benchID(benchSessions / 2)
	b.ResetTimer()
	for range b.N {
		time.Sleep(100 * time.Microsecond)
		start := time.Now()
		term.extend(id, benchTTL)
		d := time.Since(start)
		waits = append(waits, d)
		total += d
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(waits[len(waits)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(waits[len(waits)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(waits[len(waits)-1].Nanoseconds()), "max-ns")
}

// BenchmarkSessionsList measures a stale read of one page of the session
// list (the default size, from the middle of the list) at 100k sessions.
func BenchmarkSessionsList(b *testing.B) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, _ := newTestTerm(clock)
	n := term.n
	n.fsm = benchFSM(benchSessions, clock.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := n.Sessions(context.Background(), api.ListOptions{ReadOptions: api.ReadOptions{Stale: true}, After: benchID(benchSessions / 2)})
		if err != nil || len(l.Sessions) == 0 {
			b.Fatal(len(l.Sessions), err)
		}
	}
}

// BenchmarkSessionsWatchWake measures what a blocking query on the session
// list costs per change at 100k sessions: an entry is applied, and the
// query wakes and answers.
func BenchmarkSessionsWatchWake(b *testing.B) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, _ := newTestTerm(clock)
	n := term.n
	n.fsm = benchFSM(benchSessions, clock.Now())
	idx := n.fsm.AppliedIndex()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		done := make(chan error, 1)
		opt := api.ListOptions{ReadOptions: api.ReadOptions{Stale: true, Index: idx, Wait: time.Minute}}
		go func() {
			_, err := n.Sessions(ctx, opt)
			done <- err
		}()
		idx++
		n.fsm.ApplyCommand(idx, fsm.Command{Op: fsm.OpSetMember, Now: clock.Now(), Member: &fsm.Member{ID: "n1"}})
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
