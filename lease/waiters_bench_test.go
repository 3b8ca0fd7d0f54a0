package lease

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The benchmarks of this file measure what the leader pays as the state
// grows: a hand-off with many waiters, an applied entry with many blocking
// queries parked on other names, a snapshot of 100k sessions and locks, a
// refused try-acquire, and the request numbers kept for a session. They run
// a node on applyEngine (no Raft), so they time lockd's own work.

// benchNode is a serving leader on applyEngine without the term's expiry
// and timer loops: nothing ends unless the benchmark ends it.
type benchNode struct {
	b   *testing.B
	n   *Node
	eng *applyEngine
}

func newBenchNode(b *testing.B) *benchNode {
	f := fsm.New()
	eng := &applyEngine{f: f}
	n := &Node{
		cfg: validConfig(), clock: SystemClock{}, fsm: f, eng: eng,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), stop: make(chan struct{}),
	}
	term := newLeaderTerm(n, 1)
	term.ready = true
	term.leaseUntil = time.Now().Add(24 * time.Hour)
	n.term = term
	b.Cleanup(func() { term.cancel(); close(n.stop) })
	return &benchNode{b: b, n: n, eng: eng}
}

func (bn *benchNode) session() string {
	bn.b.Helper()
	s, err := bn.n.CreateSession(context.Background(), api.CreateSessionRequest{TTL: api.Duration(time.Hour)})
	if err != nil {
		bn.b.Fatal(err)
	}
	return s.ID
}

func (bn *benchNode) entries() uint64 {
	bn.eng.mu.Lock()
	defer bn.eng.mu.Unlock()
	return bn.eng.index
}

// settle waits until at least want goroutines exist and then a little
// longer, so that goroutines just started are parked in their selects.
func settle(want int) {
	for i := 0; i < 3000 && runtime.NumGoroutine() < want; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
}

// BenchmarkHandoff: one lock, a holder and W queued blocking acquires.
// Each op releases the lock, which hands it to the head of the queue in
// the same entry, waits for that waiter's Acquire to return, and queues the
// released session again at the back, so the queue stays W long.
func BenchmarkHandoff(b *testing.B) {
	for _, w := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("waiters=%d", w), func(b *testing.B) {
			bn := newBenchNode(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sessions := make([]string, w+1)
			for i := range sessions {
				sessions[i] = bn.session()
			}
			granted := make(chan string, w+1)
			queue := func(s string) {
				go func() {
					_, err := bn.n.Acquire(ctx, "x", api.AcquireRequest{Session: s, Wait: api.Duration(5 * time.Minute)})
					if err == nil {
						granted <- s
					}
				}()
			}
			if _, err := bn.n.Acquire(ctx, "x", api.AcquireRequest{Session: sessions[0]}); err != nil {
				b.Fatal(err)
			}
			base := runtime.NumGoroutine()
			for _, s := range sessions[1:] {
				queue(s)
			}
			for i := 0; i < 6000 && len(bn.n.fsm.Lock("x").Waiters) < w; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			settle(base + w)
			holder := sessions[0]
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := bn.n.Release(ctx, "x", api.SessionRequest{Session: holder}); err != nil {
					b.Fatal(err)
				}
				next := <-granted
				queue(holder)
				holder = next
			}
			b.StopTimer()
			cancel()
		})
	}
}

// BenchmarkBlockingQueryWake: Q blocking queries, each on a held lock of
// its own that nothing changes. Each op commits two entries on another lock
// (an acquire and its release); the queries should not have to wake for
// them.
func BenchmarkBlockingQueryWake(b *testing.B) {
	for _, q := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("queries=%d", q), func(b *testing.B) {
			bn := newBenchNode(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, owner := bn.session(), bn.session()
			names := make([]string, q)
			for i := range names {
				names[i] = fmt.Sprintf("q/%05d", i)
				if _, err := bn.n.Acquire(ctx, names[i], api.AcquireRequest{Session: owner}); err != nil {
					b.Fatal(err)
				}
			}
			base := runtime.NumGoroutine()
			returned := make(chan struct{}, q)
			for _, name := range names {
				idx := bn.n.fsm.Lock(name).ModifyIndex
				go func() {
					_, _ = bn.n.Lock(ctx, name, api.ReadOptions{Index: idx, Wait: 5 * time.Minute})
					returned <- struct{}{}
				}()
			}
			settle(base + q)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := bn.n.Acquire(ctx, "other", api.AcquireRequest{Session: s}); err != nil {
					b.Fatal(err)
				}
				if err := bn.n.Release(ctx, "other", api.SessionRequest{Session: s}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(returned) != 0 {
				b.Fatalf("%d blocking queries on unchanged locks returned", len(returned))
			}
			cancel()
		})
	}
}

// snapState is a state of 100k sessions, each holding one lock with a
// request number, built once for the snapshot benchmarks.
var snapState *fsm.FSM

func bigState(b *testing.B) *fsm.FSM {
	if snapState != nil {
		return snapState
	}
	f := fsm.New()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	idx := uint64(0)
	for i := range 100000 {
		id := fmt.Sprintf("%032x", i)
		idx++
		if res := f.ApplyCommand(idx, fsm.Command{Op: fsm.OpCreateSession, Now: now, Session: id, TTL: time.Minute, LockDelay: time.Second}); res.Err != nil {
			b.Fatal(res.Err)
		}
		idx++
		if res := f.ApplyCommand(idx, fsm.Command{Op: fsm.OpAcquire, Now: now, Session: id, Name: fmt.Sprintf("svc/%06d/leader", i), Seq: 1}); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	snapState = f
	return f
}

// discardSink is a raft.SnapshotSink that counts and drops the bytes.
type discardSink struct{ n int }

func (s *discardSink) Write(p []byte) (int, error) { s.n += len(p); return len(p), nil }
func (s *discardSink) Close() error                { return nil }
func (s *discardSink) ID() string                  { return "bench" }
func (s *discardSink) Cancel() error               { return nil }

var _ raft.SnapshotSink = (*discardSink)(nil)

// BenchmarkSnapshot: 100k sessions each holding a lock. fsm-goroutine is
// what raft's FSM goroutine spends in Snapshot (applies wait meanwhile);
// persist is the rest, which runs beside the applies. applies-after is
// 1,000 applies right after a snapshot, each recording a request number of
// another session (so they write all over the state, and pay for whatever
// a snapshot leaves them to do); applies-alone is the same without the
// snapshot.
func BenchmarkSnapshot(b *testing.B) {
	f := bigState(b)
	a := raftFSM{f: f}
	b.Run("fsm-goroutine", func(b *testing.B) {
		for range b.N {
			s, err := a.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			s.Release()
		}
	})
	b.Run("persist", func(b *testing.B) {
		for range b.N {
			s, err := a.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			sink := &discardSink{}
			if err := s.Persist(sink); err != nil {
				b.Fatal(err)
			}
			s.Release()
			b.ReportMetric(float64(sink.n), "bytes")
		}
	})
	for _, snap := range []bool{true, false} {
		name := "applies-alone"
		if snap {
			name = "applies-after"
		}
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			for i := range b.N {
				if snap {
					b.StopTimer()
					s, err := a.Snapshot()
					if err != nil {
						b.Fatal(err)
					}
					s.Release() // a no-op: the view stays valid while the applies run
					b.StartTimer()
				}
				for j := range 1000 {
					k := (i*1000 + j*97) % 100000
					c := fsm.Command{Op: fsm.OpAcquire, Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
						Session: fmt.Sprintf("%032x", k), Name: fmt.Sprintf("svc/%06d/leader", k), Seq: f.AppliedIndex() + 2}
					start := time.Now()
					if res := f.ApplyCommand(f.AppliedIndex()+1, c); !res.Granted {
						b.Fatal(res.Err)
					}
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-apply-µs")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-apply-µs")
		})
	}
}

// BenchmarkRefusal: a try-acquire of a lock another session holds, without
// a request number and with a repeated one, and an acquire naming a
// session that does not exist. entries/op is the Raft entries each cost.
func BenchmarkRefusal(b *testing.B) {
	cases := []struct {
		name string
		req  func(holder, other string, i int) api.AcquireRequest
		code string
	}{
		{"held-unnumbered", func(_, o string, _ int) api.AcquireRequest { return api.AcquireRequest{Session: o} }, api.CodeLockHeld},
		{"held-repeated", func(_, o string, _ int) api.AcquireRequest { return api.AcquireRequest{Session: o, Seq: 1} }, api.CodeLockHeld},
		{"held-new-number", func(_, o string, i int) api.AcquireRequest {
			return api.AcquireRequest{Session: o, Seq: uint64(i + 2)}
		}, api.CodeLockHeld},
		{"unknown-session", func(_, _ string, _ int) api.AcquireRequest { return api.AcquireRequest{Session: "nobody"} }, api.CodeSessionExpired},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			bn := newBenchNode(b)
			ctx := context.Background()
			holder, other := bn.session(), bn.session()
			if _, err := bn.n.Acquire(ctx, "x", api.AcquireRequest{Session: holder}); err != nil {
				b.Fatal(err)
			}
			if _, err := bn.n.Acquire(ctx, "x", api.AcquireRequest{Session: other, Seq: 1}); api.CodeOf(err) != api.CodeLockHeld {
				b.Fatal(err)
			}
			before := bn.entries()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := bn.n.Acquire(ctx, "x", c.req(holder, other, i)); api.CodeOf(err) != c.code {
					b.Fatalf("got %v, want %s", err, c.code)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(bn.entries()-before)/float64(b.N), "entries/op")
		})
	}
}

// BenchmarkDistinctNames: one session takes and lets go of a new lock name
// in every op, with request numbers as the client library sends them. The
// session ends up holding nothing; snapshot-B/op is how much the state
// grew per name it ever touched.
func BenchmarkDistinctNames(b *testing.B) {
	bn := newBenchNode(b)
	ctx := context.Background()
	s := bn.session()
	empty, err := bn.n.fsm.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	seq := uint64(0)
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("jobs/%08d", i)
		seq++
		if _, err := bn.n.Acquire(ctx, name, api.AcquireRequest{Session: s, Seq: seq}); err != nil {
			b.Fatal(err)
		}
		seq++
		if err := bn.n.Release(ctx, name, api.SessionRequest{Session: s, Seq: seq}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	full, err := bn.n.fsm.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(full)-len(empty))/float64(b.N), "snapshot-B/op")
}

// BenchmarkKVWatchWake: W watches parked on keys and prefixes that nothing
// changes (nine in ten on a key of their own among 10,000 written first,
// one in ten on a prefix of its own with nothing under it), and one watch
// of another key. Each op puts that key (1 KiB) and waits until its
// watch has the event, then watches again; the parked watches should not
// have to wake for it, so the op should cost the same at 0 and 10,000.
func BenchmarkKVWatchWake(b *testing.B) {
	for _, w := range []int{0, 10000} {
		b.Run(fmt.Sprintf("watches=%d", w), func(b *testing.B) {
			bn := newBenchNode(b)
			bn.n.cfg.MaxBlockingQueries = w + 1
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			val := make([]byte, 1024)
			var index uint64
			for i := range 10000 {
				r, err := bn.n.PutKV(ctx, fmt.Sprintf("k/%05d", i), api.KVPutRequest{Value: val})
				if err != nil {
					b.Fatal(err)
				}
				index = r.Index
			}
			base := runtime.NumGoroutine()
			returned := make(chan struct{}, w)
			for i := range w {
				opt := api.WatchOptions{ReadOptions: api.ReadOptions{Index: index, Wait: 5 * time.Minute}, Key: fmt.Sprintf("k/%05d", i), Keys: true}
				if i%10 == 9 {
					opt.Key, opt.Prefix = fmt.Sprintf("p/%05d/", i), true
				}
				go func() {
					_, _ = bn.n.KVWatch(ctx, opt)
					returned <- struct{}{}
				}()
			}
			settle(base + w)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				woke := make(chan uint64, 1)
				go func() {
					ev, err := bn.n.KVWatch(ctx, api.WatchOptions{ReadOptions: api.ReadOptions{Index: index, Wait: time.Minute}, Key: "m/hot", Keys: true})
					if err != nil || len(ev.Events) == 0 {
						b.Errorf("the watch of m/hot: %d events, %v", len(ev.Events), err)
					}
					woke <- max(ev.Index, lastIndex(ev))
				}()
				r, err := bn.n.PutKV(ctx, "m/hot", api.KVPutRequest{Value: val})
				if err != nil {
					b.Fatal(err)
				}
				if got := <-woke; got != r.Index {
					b.Fatalf("the watch of m/hot answered index %d, want %d", got, r.Index)
				}
				index = r.Index
			}
			b.StopTimer()
			if len(returned) != 0 {
				b.Fatalf("%d watches of keys and prefixes nothing changed returned", len(returned))
			}
			cancel()
		})
	}
}

// lastIndex is the index of the last event of a watch's answer, 0 if none.
func lastIndex(ev api.KVEvents) uint64 {
	if len(ev.Events) == 0 {
		return 0
	}
	return ev.Events[len(ev.Events)-1].Index
}
