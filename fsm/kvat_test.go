package fsm

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
