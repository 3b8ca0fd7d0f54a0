package fsm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// rangeKeys renders records as "key=value@mod" for comparisons.
func rangeKeys(kvs []KV) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, fmt.Sprintf("%s=%s@%d/%d/v%d", kv.Key, kv.Value, kv.CreateIndex, kv.ModifyIndex, kv.Version))
	}
	return out
}

// RangeAt at every past revision answers exactly what RangeAt answered
// right after that entry, for random puts, deletes of keys and ranges,
// and entries that change no key.
func TestRangeAt_EveryPastRevisionAsItWas(t *testing.T) {
	h := newHarness(t)
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []string{"a", "a/1", "a/2", "b", "b/1", "c"}
	seen := map[uint64][]string{}
	ranges := [][2][]byte{{[]byte("a"), []byte{0}}, {[]byte("a/"), PrefixEnd([]byte("a/"))}, {[]byte("b"), nil}}
	snap := func() {
		for i, r := range ranges {
			kvs, applied, err := h.f.RangeAt(r[0], r[1], 0, false)
			if err != nil || applied != h.idx {
				t.Fatalf("range now: applied %d (want %d), %v", applied, h.idx, err)
			}
			seen[h.idx*10+uint64(i)] = rangeKeys(kvs)
		}
	}
	h.mustApply(create("s", 0))
	snap()
	for n := range 200 {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(5) {
		case 0, 1:
			h.mustApply(puts(k, fmt.Sprint(rng.IntN(100))))
		case 2:
			h.mustApply(txn(Txn{Success: []TxnOp{Put([]byte(k), []byte("x")), Delete([]byte(k)), Put([]byte(k), []byte("y"))}}))
		case 3:
			h.mustApply(txn(Txn{Success: []TxnOp{{Type: TxnDelete, Key: []byte(k), End: PrefixEnd([]byte(k))}}}))
		default:
			h.mustApply(create(fmt.Sprint("s", n), 0)) // changes no key
		}
		snap()
	}
	for at := uint64(1); at <= h.idx; at++ {
		for i, r := range ranges {
			kvs, applied, err := h.f.RangeAt(r[0], r[1], at, false)
			if err != nil || applied != h.idx {
				t.Fatalf("range at %d: %v", at, err)
			}
			if got, want := rangeKeys(kvs), seen[at*10+uint64(i)]; !slices.Equal(got, want) {
				t.Fatalf("range %d at revision %d: %v, want %v", i, at, got, want)
			}
		}
	}
	if kvs, _, _ := h.f.RangeAt([]byte("a"), []byte{0}, 1, true); len(kvs) > 0 {
		t.Fatalf("keys at revision 1: %v", kvs)
	}
	if _, _, err := h.f.RangeAt([]byte("a"), nil, h.idx+1, false); !errors.Is(err, ErrFutureRevision) {
		t.Fatalf("a future revision: %v", err)
	}
}

// Below the history's reach RangeAt refuses, with the oldest revision it
// can answer; at it, it answers.
func TestRangeAt_RefusesWhatTheHistoryNoLongerHolds(t *testing.T) {
	h := limitedHarness(t, HistoryLimits{MinEvents: 2, MaxEvents: 2})
	for i := range 5 {
		h.mustApply(puts("k", fmt.Sprint(i)))
	}
	c := h.f.Compacted()
	if c == 0 {
		t.Fatal("nothing compacted")
	}
	var ce *CompactedError
	if _, _, err := h.f.RangeAt([]byte("k"), nil, c-1, false); !errors.As(err, &ce) || ce.Oldest != c {
		t.Fatalf("range below the history: %v", err)
	}
	kvs, _, err := h.f.RangeAt([]byte("k"), nil, c, false)
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != fmt.Sprint(c-1) {
		t.Fatalf("range at the compacted index %d: %v %v", c, rangeKeys(kvs), err)
	}
}

// ReadTxn evaluates the compares and runs the reads of the branch they
// choose, at past revisions too, changing nothing.
func TestReadTxn_ComparesChooseTheBranchAndReadsMayBePast(t *testing.T) {
	h := newHarness(t)
	h.mustApply(puts("a", "1")) // 1
	h.mustApply(puts("a", "2")) // 2
	reads := []RangeRead{{Key: []byte("a"), Rev: 1}, {Key: []byte("a")}}
	ok, res, applied, err := h.f.ReadTxn([]Compare{{Key: []byte("a"), Target: TargetVersion, Op: Equal, Number: 2}}, reads, nil)
	if err != nil || !ok || applied != 2 || len(res) != 2 || string(res[0][0].Value) != "1" || string(res[1][0].Value) != "2" {
		t.Fatalf("held: %v %v %d %v", ok, res, applied, err)
	}
	ok, res, _, err = h.f.ReadTxn([]Compare{{Key: []byte("a"), Target: TargetValue, Op: Equal, Value: []byte("1")}}, reads, reads[1:])
	if err != nil || ok || len(res) != 1 || string(res[0][0].Value) != "2" {
		t.Fatalf("failed: %v %v %v", ok, res, err)
	}
	if _, _, _, err := h.f.ReadTxn([]Compare{{Key: []byte("a"), Target: "nope"}}, nil, nil); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("a bad compare: %v", err)
	}
	if _, _, _, err := h.f.ReadTxn(nil, []RangeRead{{Key: []byte("a"), Rev: 3}}, nil); !errors.Is(err, ErrFutureRevision) {
		t.Fatalf("a future read: %v", err)
	}
	if h.f.AppliedIndex() != 2 {
		t.Fatal("a read changed the state")
	}
}

// TestRangeFirst_IsThePrefixOfTheRange: RangeFirst's records are the
// first limit of the range as RangeAt reads it now, its count the
// range's size, for single keys, ranges, every key, empty and reversed
// ranges, with and without values.
func TestRangeFirst_IsThePrefixOfTheRange(t *testing.T) {
	h := newHarness(t)
	for i := range 30 {
		h.mustApply(puts(fmt.Sprintf("r/%02d", i), fmt.Sprintf("v%d", i)))
	}
	h.mustApply(puts("s", "x"))
	all := []byte{0}
	for _, rg := range [][2][]byte{
		{[]byte("r/"), []byte("r0")}, {[]byte("r/05"), nil}, {[]byte("r/05x"), nil}, {[]byte("r/10"), []byte("r/20")},
		{[]byte("a"), all}, {[]byte("r/20"), []byte("r/10")}, {[]byte("t"), all},
	} {
		whole, applied, err := h.f.RangeAt(rg[0], rg[1], 0, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{0, 1, 7, 100} {
			for _, keysOnly := range []bool{false, true} {
				kvs, count, at := h.f.RangeFirst(rg[0], rg[1], limit, keysOnly, false)
				want := whole
				if limit > 0 && len(want) > limit {
					want = want[:limit]
				}
				if count != len(whole) || at != applied || len(kvs) != len(want) {
					t.Fatalf("%q..%q limit %d: %d records, count %d at %d; want %d, %d at %d", rg[0], rg[1], limit, len(kvs), count, at, len(want), len(whole), applied)
				}
				for i := range kvs {
					w := want[i]
					if keysOnly {
						w.Value = nil
					}
					if !reflect.DeepEqual(kvs[i], w) {
						t.Fatalf("%q..%q limit %d: record %d is %+v, want %+v", rg[0], rg[1], limit, i, kvs[i], w)
					}
				}
			}
		}
		if kvs, count, _ := h.f.RangeFirst(rg[0], rg[1], 3, false, true); kvs != nil || count != len(whole) {
			t.Fatalf("%q..%q count only: %v, %d", rg[0], rg[1], kvs, count)
		}
	}
}

// BenchmarkRangePage reads the first 10 of 20,000 keys of 1 KiB under
// one prefix: "first" as etcd's Range with a limit is now answered
// (RangeFirst), "whole" as it was before (RangeAt copies the range, the
// answer keeps 10).
func BenchmarkRangePage(b *testing.B) {
	f := bigState(b, 20000)
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if kvs, n, _ := f.RangeFirst([]byte("big/"), []byte("big0"), 10, false, false); len(kvs) != 10 || n != 20000 {
				b.Fatal(len(kvs), n)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if kvs, _, err := f.RangeAt([]byte("big/"), []byte("big0"), 0, false); err != nil || len(kvs) != 20000 {
				b.Fatal(len(kvs), err)
			}
		}
	})
}
