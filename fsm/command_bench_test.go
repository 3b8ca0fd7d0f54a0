package fsm

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// benchCommands returns the entries of n uncontended cycles, as a leader
// would commit them: a session, then an acquire and a release of the
// session's own lock per cycle, each with its request number.
func benchCommands(b *testing.B, n int) [][]byte {
	b.Helper()
	now := time.Unix(1_700_000_000, 0).UTC()
	var out [][]byte
	add := func(c Command) {
		c.Now = now
		data, err := Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	add(Command{Op: OpCreateSession, Session: "s1", TTL: 10 * time.Second, LockDelay: 15 * time.Second})
	for i := range n {
		seq := uint64(2*i + 1)
		add(Command{Op: OpAcquire, Session: "s1", Name: fmt.Sprintf("bench/lock-%d", i%64), Mode: Exclusive, Seq: seq})
		add(Command{Op: OpLetGo, Session: "s1", Name: fmt.Sprintf("bench/lock-%d", i%64), Seq: seq + 1})
	}
	return out
}

// BenchmarkEncode measures encoding one acquire command for the log.
func BenchmarkEncode(b *testing.B) {
	c := Command{Op: OpAcquire, Now: time.Now().UTC(), Session: "0123456789abcdef0123456789abcdef",
		Name: "jobs/nightly-report", Mode: Exclusive, Seq: 12345}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode measures decoding it again, as every node does for every
// entry it applies.
func BenchmarkDecode(b *testing.B) {
	data, err := Encode(Command{Op: OpAcquire, Now: time.Now().UTC(), Session: "0123456789abcdef0123456789abcdef",
		Name: "jobs/nightly-report", Mode: Exclusive, Seq: 12345})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyBatch measures applying a batch of 64 committed entries
// (32 acquire and release cycles), the size hashicorp/raft hands the FSM
// at most at once by default; ns/op is per batch.
func BenchmarkApplyBatch(b *testing.B) {
	const batch = 64
	entries := benchCommands(b, 1<<12)
	var f *FSM
	var index uint64
	next := len(entries) // where the next batch starts; the end means a fresh FSM
	b.ReportAllocs()
	for b.Loop() {
		if next+batch > len(entries) {
			// Request numbers cannot repeat in one FSM: start over.
			b.StopTimer()
			f, index, next = New(), 1, 1
			if r := f.Apply(index, entries[0]); r.Err != nil {
				b.Fatal(r.Err)
			}
			b.StartTimer()
		}
		for _, e := range entries[next : next+batch] {
			index++
			if r := f.Apply(index, e); r.Err != nil {
				b.Fatalf("entry %d: %v", index, r.Err)
			}
		}
		next += batch
	}
}

// BenchmarkSessionMemory reports the heap an idle session takes in the
// state machine (bytes/session), from 100,000 sessions created by their
// entries. Every node holds this; the leader adds its deadline.
func BenchmarkSessionMemory(b *testing.B) {
	const n = 100_000
	now := time.Unix(1_700_000_000, 0).UTC()
	entries := make([][]byte, n)
	for i := range entries {
		data, err := Encode(Command{Op: OpCreateSession, Now: now, Session: fmt.Sprintf("%032x", i),
			TTL: 30 * time.Second, LockDelay: 15 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = data
	}
	for b.Loop() {
		b.StopTimer()
		before := heapInUse()
		f := New()
		b.StartTimer()
		for i, e := range entries {
			if r := f.Apply(uint64(i+1), e); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(heapInUse()-before)/n, "bytes/session")
		runtime.KeepAlive(f)
		b.StartTimer()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
