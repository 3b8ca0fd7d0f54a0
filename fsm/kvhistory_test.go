package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

func limitedHarness(t *testing.T, l HistoryLimits) *harness {
	h := newHarness(t)
	if err := h.f.SetHistoryLimits(l); err != nil {
		t.Fatal(err)
	}
	return h
}

// indexesOf returns the index of every event the history keeps.
func indexesOf(t *testing.T, f *FSM) []uint64 {
	t.Helper()
	var out []uint64
	after := f.KVCounts().Compacted
	page, err := f.Events(after, nil, []byte{0}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		out = append(out, e.Index)
	}
	return out
}

// The history keeps the last MinEvents events once they are older than
// MinAge, and drops whole entries only.
func TestHistory_RetentionByCountAndAge(t *testing.T) {
	h := limitedHarness(t, HistoryLimits{MinEvents: 3, MinAge: time.Minute, MaxEvents: 100})
	for i := range 5 {
		h.mustApply(puts(fmt.Sprint("k", i), "v")) // 1..5
	}
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("young events: %v", got)
	}
	h.advance(time.Minute)                  // 1..5 are now MinAge old: not younger
	h.mustApply(puts("k5", "v", "k6", "v")) // 6: two events
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{5, 6, 6}) {
		t.Fatalf("after a minute: %v", got)
	}
	_, err := h.f.Events(3, nil, []byte{0}, 10)
	var ce *CompactedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCompacted) || ce.Oldest != 4 {
		t.Fatalf("read after 3: %v", err)
	}
	if _, err := h.f.Events(4, nil, []byte{0}, 10); err != nil {
		t.Fatalf("read after the oldest: %v", err)
	}
	// An entry is never split: dropping 5 would leave 2 events, under 3.
	h.advance(time.Hour)
	h.mustApply(puts("k7", "v")) // 7
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{6, 6, 7}) {
		t.Fatalf("an hour on: %v", got)
	}
	h.advance(time.Hour)
	h.mustApply(puts("k8", "v", "k9", "v", "k10", "v")) // 8
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{8, 8, 8}) || h.f.KVCounts().Compacted != 7 {
		t.Fatalf("after a 3-event entry: %v, compacted %d", got, h.f.KVCounts().Compacted)
	}
	// A clock that goes back keeps more, never less.
	h.advance(-2 * time.Hour)
	h.mustApply(puts("k11", "v"))
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{8, 8, 8, 9}) {
		t.Fatalf("after a clock step back: %v", got)
	}
}

// MaxEvents bounds the history whatever the age; an entry with more
// events than that goes as a whole.
func TestHistory_CapAndOversizedEntry(t *testing.T) {
	h := limitedHarness(t, HistoryLimits{MinEvents: 2, MinAge: time.Hour, MaxEvents: 4})
	for i := range 3 {
		h.mustApply(puts(fmt.Sprint("a", i), "v", fmt.Sprint("b", i), "v")) // 1..3, 2 events each
	}
	if got := indexesOf(t, h.f); !slices.Equal(got, []uint64{2, 2, 3, 3}) {
		t.Fatalf("capped: %v", got)
	}
	h.mustApply(puts("c1", "v", "c2", "v", "c3", "v", "c4", "v", "c5", "v")) // 4: 5 events
	if got := indexesOf(t, h.f); len(got) != 0 || h.f.KVCounts().Compacted != 4 || h.f.KVCounts().Events != 0 {
		t.Fatalf("an oversized entry: %v, %+v", got, h.f.KVCounts())
	}
	if page, err := h.f.Events(4, nil, []byte{0}, 10); err != nil || len(page.Events) != 0 || page.Next != 4 {
		t.Fatalf("reading after the oversized entry: %+v %v", page, err)
	}
	var ce *CompactedError
	if _, err := h.f.Events(3, nil, []byte{0}, 10); !errors.As(err, &ce) || ce.Oldest != 4 {
		t.Fatalf("reading before it: %v", err)
	}
}

// The defaults and the setter's rules.
func TestHistory_Limits(t *testing.T) {
	f := New()
	for _, l := range []HistoryLimits{{MinEvents: -1, MaxEvents: 1}, {MaxEvents: 0}, {MinEvents: 5, MaxEvents: 4}, {MinAge: -1, MaxEvents: 1}} {
		if err := f.SetHistoryLimits(l); err == nil {
			t.Errorf("limits %+v accepted", l)
		}
	}
	if d := DefaultHistoryLimits(); d.MinEvents != 10_000 || d.MinAge != 5*time.Minute || d.MaxEvents != 1_000_000 {
		t.Fatalf("defaults %+v", d)
	}
	h := limitedHarness(t, HistoryLimits{MinEvents: 1, MaxEvents: 2})
	h.mustApply(puts("k", "v"))
	if err := h.f.SetHistoryLimits(DefaultHistoryLimits()); err == nil {
		t.Fatal("limits changed after an entry")
	}
	// A restore keeps the node's limits.
	g := limitedHarness(t, HistoryLimits{MinEvents: 1, MaxEvents: 1})
	if err := g.f.Restore(bytes.NewReader(mustSnapshot(t, h.f))); err != nil {
		t.Fatal(err)
	}
	g.idx = 1
	g.mustApply(puts("a", "v", "b", "v", "c", "v"))
	if n := g.f.KVCounts().Events; n != 0 {
		t.Fatalf("restored node kept %d events past its cap of 1", n)
	}
}

// A page of events never splits an entry, and a key range filters them.
func TestEvents_PagesNeverSplitAnEntry(t *testing.T) {
	h := newHarness(t)
	h.mustApply(puts("a/1", "v"))                                     // 1
	h.mustApply(puts("a/2", "v", "b/1", "v", "a/3", "v", "a/4", "v")) // 2
	h.mustApply(puts("b/2", "v"))                                     // 3
	h.mustApply(dels("a/1", "a/2"))                                   // 4
	type read struct {
		after    uint64
		key, end string
		limit    int
		want     []string
		next     uint64
		more     bool
	}
	all := "\x00"
	for i, r := range []read{
		{0, "", all, 1, []string{"1 put a/1"}, 1, true},
		{1, "", all, 1, []string{"2 put a/2", "2 put b/1", "2 put a/3", "2 put a/4"}, 2, true},
		{1, "", all, 5, []string{"2 put a/2", "2 put b/1", "2 put a/3", "2 put a/4", "3 put b/2"}, 3, true},
		{2, "", all, 100, []string{"3 put b/2", "4 delete a/1", "4 delete a/2"}, 4, false},
		{0, "a/", "a0", 2, []string{"1 put a/1", "2 put a/2", "2 put a/3", "2 put a/4"}, 2, true},
		{2, "a/", "a0", 2, []string{"4 delete a/1", "4 delete a/2"}, 4, false},
		{0, "b/1", "", 100, []string{"2 put b/1"}, 4, false},
		{4, "", all, 100, nil, 4, false},
		{9, "", all, 100, nil, 9, false},
	} {
		var end []byte
		if r.end != "" {
			end = []byte(r.end)
		}
		page, err := h.f.Events(r.after, []byte(r.key), end, r.limit)
		var got []string
		for _, e := range page.Events {
			got = append(got, fmt.Sprintf("%d %s %s", e.Index, e.Type, e.KV.Key))
		}
		if err != nil || !slices.Equal(got, r.want) || page.Next != r.next || page.More != r.more {
			t.Errorf("read %d: %v next %d more %v (%v), want %v %d %v", i, got, page.Next, page.More, err, r.want, r.next, r.more)
		}
	}
	page, _ := h.f.Events(3, []byte("a/1"), nil, 1)
	e := page.Events[0]
	if e.Type != EventDelete || e.KV.ModifyIndex != 4 || e.KV.Value != nil || e.Prev == nil || e.Prev.ModifyIndex != 1 || e.Prev.CreateIndex != 1 {
		t.Fatalf("delete event %+v prev %+v", e, e.Prev)
	}
	page, _ = h.f.Events(0, []byte("a/1"), nil, 1)
	if e := page.Events[0]; e.Prev != nil || e.KV.Version != 1 || string(e.KV.Value) != "v" {
		t.Fatalf("put event %+v", e)
	}
}

// BenchmarkKVMemory reports the heap a key of 1 KiB takes in the state
// machine (bytes/key, value included), from 100,000 keys put by their
// entries, 100 to an entry, with the default history limits (which keep
// the last 10,000 events: those share their records with the keys).
func BenchmarkKVMemory(b *testing.B) {
	const n, perEntry = 100_000, 100
	now := time.Unix(1_700_000_000, 0).UTC()
	value := make([]byte, 1024)
	var entries [][]byte
	for i := 0; i < n; i += perEntry {
		var tx Txn
		for j := i; j < i+perEntry; j++ {
			tx.Success = append(tx.Success, Put(fmt.Appendf(nil, "/app/config/%08d", j), value))
		}
		data, err := Encode(Command{Op: OpTxn, Now: now, Txn: &tx})
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, data)
	}
	for b.Loop() {
		b.StopTimer()
		before := heapInUse()
		f := New()
		for i, e := range entries {
			if r := f.Apply(uint64(i+1), e); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		b.ReportMetric(float64(heapInUse()-before)/n, "bytes/key")
		runtime.KeepAlive(f)
		b.StartTimer()
	}
}
