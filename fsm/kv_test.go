package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Builders for transactions, to keep the tables readable.

func txn(t Txn) Command { return Command{Op: OpTxn, Txn: &t} }

func puts(kvs ...string) Command {
	var ops []TxnOp
	for i := 0; i+1 < len(kvs); i += 2 {
		ops = append(ops, Put([]byte(kvs[i]), []byte(kvs[i+1])))
	}
	return txn(Txn{Success: ops})
}

func ephemeral(session, key, value string) Command {
	op := Put([]byte(key), []byte(value))
	op.Session = session
	return txn(Txn{Success: []TxnOp{op}})
}

func sequential(prefix string) Command {
	return txn(Txn{Success: []TxnOp{{Type: TxnPut, Key: []byte(prefix), Sequential: true}}})
}

func dels(keys ...string) Command {
	var ops []TxnOp
	for _, k := range keys {
		ops = append(ops, Delete([]byte(k)))
	}
	return txn(Txn{Success: ops})
}

func prefixOp(typ TxnOpType, prefix string) TxnOp {
	return TxnOp{Type: typ, Key: []byte(prefix), End: PrefixEnd([]byte(prefix))}
}

func keysOfKVs(kvs []KV) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func keysOfEvents(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%d %s %s", e.Index, e.Type, e.KV.Key))
	}
	return out
}

func (h *harness) get(key string) (KV, bool) { return h.f.Get([]byte(key)) }

// mustRefuse applies c, which must be refused with want and change nothing
// but the applied index; and Refusal must have said so in advance.
func (h *harness) mustRefuse(c Command, want error) {
	h.t.Helper()
	c.Now = h.now
	told := h.f.Refusal(c)
	before := mustStateJSON(h.t, h.f)
	events := h.f.KVCounts()
	res := h.apply(c)
	if !errors.Is(res.Err, want) || res.Txn != nil {
		h.t.Fatalf("entry %d: %+v, want refused with %v", h.idx, res, want)
	}
	if told == nil || told.Error() != res.Err.Error() {
		h.t.Fatalf("entry %d: Refusal said %v, Apply answered %v", h.idx, told, res.Err)
	}
	if after := mustStateJSON(h.t, h.f); !bytes.Equal(before, after) || h.f.KVCounts() != events {
		h.t.Fatalf("entry %d: refused (%v), yet the state changed:\n%s\n%s", h.idx, res.Err, before, after)
	}
}

// Every compare target under every operator, on a key that exists and on
// one that does not.
func TestTxn_CompareTargetsAndOperators(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("s", 0))            // 1
	h.mustApply(puts("k", "v1"))           // 2: created
	h.mustApply(ephemeral("s", "k", "v2")) // 3: version 2, owned by s
	h.mustApply(puts("other", "x"))        // 4
	num := func(target CompareTarget, op CompareOp, n uint64) Compare {
		return Compare{Key: []byte("k"), Target: target, Op: op, Number: n}
	}
	val := func(key string, op CompareOp, v string) Compare {
		return Compare{Key: []byte(key), Target: TargetValue, Op: op, Value: []byte(v)}
	}
	sess := func(key string, op CompareOp, s string) Compare {
		return Compare{Key: []byte(key), Target: TargetSession, Op: op, Session: s}
	}
	missing := func(c Compare) Compare { c.Key = []byte("nope"); return c }
	tests := []struct {
		c    Compare
		want bool
	}{
		{val("k", Equal, "v2"), true}, {val("k", Equal, "v1"), false},
		{val("k", NotEqual, "v1"), true}, {val("k", NotEqual, "v2"), false},
		{val("k", Less, "v3"), true}, {val("k", Less, "v2"), false},
		{val("k", Greater, "v1"), true}, {val("k", Greater, "v2"), false},
		{val("k", Greater, ""), true}, {val("k", Less, "v20"), true},
		// A value of a missing key never compares.
		{val("nope", Equal, ""), false}, {val("nope", NotEqual, "x"), false},
		{val("nope", Less, "x"), false}, {val("nope", Greater, ""), false},
		{num(TargetVersion, Equal, 2), true}, {num(TargetVersion, NotEqual, 2), false},
		{num(TargetVersion, Less, 3), true}, {num(TargetVersion, Greater, 1), true},
		{num(TargetVersion, Greater, 2), false}, {missing(num(TargetVersion, Equal, 0)), true},
		{num(TargetCreate, Equal, 2), true}, {num(TargetCreate, NotEqual, 3), true},
		{num(TargetCreate, Less, 2), false}, {num(TargetCreate, Greater, 1), true},
		{missing(num(TargetCreate, Less, 1)), true},
		{num(TargetModify, Equal, 3), true}, {num(TargetModify, NotEqual, 3), false},
		{num(TargetModify, Less, 4), true}, {num(TargetModify, Greater, 3), false},
		{missing(num(TargetModify, Equal, 0)), true}, {missing(num(TargetModify, Greater, 0)), false},
		{sess("k", Equal, "s"), true}, {sess("k", NotEqual, "s"), false},
		{sess("k", Less, "t"), true}, {sess("k", Greater, "r"), true},
		{sess("other", Equal, ""), true}, {sess("nope", Equal, ""), true}, {sess("nope", Less, "s"), true},
		{num(TargetExists, Equal, 1), true}, {num(TargetExists, NotEqual, 1), false},
		{num(TargetExists, Greater, 0), true}, {num(TargetExists, Less, 1), false},
		{missing(num(TargetExists, Equal, 0)), true}, {missing(num(TargetExists, Less, 1)), true},
		{missing(num(TargetExists, Greater, 0)), false},
	}
	for i, tc := range tests {
		res := h.mustApply(txn(Txn{Compare: []Compare{tc.c}, Success: []TxnOp{Get([]byte("k"))}}))
		if res.Txn.Succeeded != tc.want {
			t.Errorf("case %d %s %s %q/%d/%q on %s: succeeded %v, want %v", i, tc.c.Target, tc.c.Op, tc.c.Value, tc.c.Number, tc.c.Session, tc.c.Key, res.Txn.Succeeded, tc.want)
		}
		if n := len(res.Txn.Results); n != map[bool]int{true: 1, false: 0}[tc.want] {
			t.Errorf("case %d: %d results of the branch that ran", i, n)
		}
	}
	// Every compare must hold: one that does not runs the failure branch.
	res := h.mustApply(txn(Txn{
		Compare: []Compare{num(TargetVersion, Equal, 2), val("k", Equal, "nope")},
		Success: []TxnOp{Put([]byte("won"), nil)}, Failure: []TxnOp{Put([]byte("lost"), nil)},
	}))
	if _, ok := h.get("lost"); res.Txn.Succeeded || !ok {
		t.Fatalf("one failing compare of two: %+v", res.Txn)
	}
	// Malformed compares are refused, whatever the state.
	for _, c := range []Compare{
		{Key: []byte("k"), Target: "size", Op: Equal},
		{Key: []byte("k"), Target: TargetVersion, Op: "<="},
		{Key: nil, Target: TargetVersion, Op: Equal},
		{Key: []byte("k"), Target: TargetVersion, Op: Equal, Value: []byte("x")},
		{Key: []byte("k"), Target: TargetValue, Op: Equal, Number: 1},
		{Key: []byte("k"), Target: TargetExists, Op: Equal, Number: 2},
		{Key: []byte("k"), Target: TargetModify, Op: Equal, Session: "s"},
	} {
		h.mustRefuse(txn(Txn{Compare: []Compare{c}}), ErrBadCommand)
	}
}

// Put and delete with cas are transactions with one compare on the
// modify index: cas=0 creates only, cas=N changes only what N last wrote.
func TestTxn_CAS(t *testing.T) {
	h := newHarness(t)
	casPut := func(key, value string, cas uint64) Command {
		return txn(Txn{Compare: []Compare{CAS([]byte(key), cas)}, Success: []TxnOp{Put([]byte(key), []byte(value))}})
	}
	casDel := func(key string, cas uint64) Command {
		return txn(Txn{Compare: []Compare{CAS([]byte(key), cas)}, Success: []TxnOp{Delete([]byte(key))}})
	}
	steps := []struct {
		c       Command
		ok      bool
		value   string // "" for a missing key
		version uint64
	}{
		{casPut("k", "a", 0), true, "a", 1},  // 1: created
		{casPut("k", "b", 0), false, "a", 1}, // exists
		{casPut("k", "b", 2), false, "a", 1}, // wrong index
		{casPut("k", "b", 1), true, "b", 2},  // 4
		{casDel("k", 1), false, "b", 2},
		{casDel("k", 4), true, "", 0}, // 6
		{casDel("k", 0), true, "", 0}, // nothing left to delete: succeeds, deletes nothing
		{casPut("k", "c", 4), false, "", 0},
		{casPut("k", "c", 0), true, "c", 1}, // 9: created again, version 1
	}
	for i, s := range steps {
		res := h.mustApply(s.c)
		kv, ok := h.get("k")
		if res.Txn.Succeeded != s.ok || ok != (s.value != "") || string(kv.Value) != s.value || kv.Version != s.version {
			t.Fatalf("step %d: succeeded %v, key %+v (exists %v); want %v %q v%d", i, res.Txn.Succeeded, kv, ok, s.ok, s.value, s.version)
		}
	}
	if kv, _ := h.get("k"); kv.CreateIndex != 9 || kv.ModifyIndex != 9 {
		t.Fatalf("recreated key %+v", kv)
	}
	// The index of the namespace never goes back: a missing key reads
	// with the last change's index, the delete of step 6 included.
	h.mustApply(dels("k")) // 10
	if kv, ok := h.get("k"); ok || kv.ModifyIndex != 10 || h.f.KVIndex() != 10 {
		t.Fatalf("deleted key reads %+v %v, index %d", kv, ok, h.f.KVIndex())
	}
	h.mustApply(dels("k")) // deletes nothing: no change
	if h.f.KVIndex() != 10 {
		t.Fatalf("a delete of nothing moved the index to %d", h.f.KVIndex())
	}
}

// What a put, a delete and a get return, ranges and prefixes included.
func TestTxn_OperationsAndResults(t *testing.T) {
	h := newHarness(t)
	h.mustApply(puts("a", "1", "b/1", "2", "b/2", "3", "b/3", "4", "c", "5")) // 1
	res := h.mustApply(txn(Txn{Success: []TxnOp{
		{Type: TxnPut, Key: []byte("a"), Value: []byte("x"), Flags: 7},
		prefixOp(TxnGet, "b/"),
		{Type: TxnGet, Key: []byte("b/"), End: PrefixEnd([]byte("b/")), Limit: 2},
		{Type: TxnGet, Key: []byte("b/"), End: PrefixEnd([]byte("b/")), KeysOnly: true},
		{Type: TxnGet, Key: []byte("b/"), End: PrefixEnd([]byte("b/")), CountOnly: true},
		{Type: TxnGet, Key: nil, End: []byte{0}, CountOnly: true},
		{Type: TxnGet, Key: []byte("b/2"), End: []byte{0}},
		{Type: TxnDelete, Key: []byte("b/2"), End: []byte("c")},
		Get([]byte("b/2")),
		Get([]byte("a")),
	}})) // 2
	r := res.Txn.Results
	if r[0].KV == nil || string(r[0].KV.Value) != "x" || r[0].KV.Version != 2 || r[0].KV.Flags != 7 || string(r[0].Prev.Value) != "1" {
		t.Fatalf("put: %+v", r[0])
	}
	for i, want := range []struct {
		keys  []string
		count int
		more  bool
	}{
		{[]string{"b/1", "b/2", "b/3"}, 3, false},
		{[]string{"b/1", "b/2"}, 2, true},
		{[]string{"b/1", "b/2", "b/3"}, 3, false},
		{nil, 3, false},
		{nil, 5, false},
		{[]string{"b/2", "b/3", "c"}, 3, false},
		{[]string{"b/2", "b/3"}, 2, false}, // the delete
		{nil, 0, false},                    // gone, within the same entry
		{[]string{"a"}, 1, false},
	} {
		got := r[i+1]
		if !slices.Equal(keysOfKVs(got.KVs), want.keys) || got.Count != want.count || got.More != want.more {
			t.Errorf("op %d: %v count %d more %v, want %v %d %v", i+1, keysOfKVs(got.KVs), got.Count, got.More, want.keys, want.count, want.more)
		}
	}
	if string(r[2].KVs[0].Value) != "2" || r[3].KVs[0].Value != nil || string(r[9].KVs[0].Value) != "x" {
		t.Fatalf("values: %+v / %+v / %+v", r[2].KVs[0], r[3].KVs[0], r[9].KVs[0])
	}
	// The records returned are copies: changing them changes nothing.
	r[9].KVs[0].Value[0] = 'y'
	if kv, _ := h.get("a"); string(kv.Value) != "x" {
		t.Fatalf("a result shares its bytes with the state: %q", kv.Value)
	}
	// PrefixEnd.
	for prefix, want := range map[string]string{"b/": "b0", "a\xff": "b", "\xff\xff": "\x00", "": "\x00"} {
		if got := string(PrefixEnd([]byte(prefix))); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", prefix, got, want)
		}
	}
	// Malformed operations are refused.
	long := strings.Repeat("k", MaxKeyLen+1)
	for i, op := range []TxnOp{
		{Type: "rename", Key: []byte("a")},
		{Type: TxnPut},
		{Type: TxnPut, Key: []byte(long)},
		{Type: TxnPut, Key: []byte(long[:MaxKeyLen-seqDigits+1]), Sequential: true},
		{Type: TxnPut, Key: []byte("a"), Value: make([]byte, MaxValueLen+1)},
		{Type: TxnPut, Key: []byte("a"), End: []byte("b")},
		{Type: TxnPut, Key: []byte("a"), Limit: 1},
		{Type: TxnDelete},
		{Type: TxnDelete, Key: []byte("a"), Value: []byte("v")},
		{Type: TxnDelete, Key: []byte("a"), Limit: 1},
		{Type: TxnGet, Key: []byte("a"), Session: "s"},
		{Type: TxnGet, Key: []byte("a"), Limit: -1},
		{Type: TxnGet, Key: []byte(long), End: []byte{0}},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h.t = t
			h.mustRefuse(txn(Txn{Failure: []TxnOp{op}}), ErrBadCommand)
		})
	}
	h.t = t
	h.mustApply(txn(Txn{Success: []TxnOp{{Type: TxnPut, Key: []byte(long[:MaxKeyLen])}, {Type: TxnPut, Key: []byte(long[:MaxKeyLen-seqDigits]), Sequential: true}}}))
	h.mustRefuse(Command{Op: OpTxn}, ErrBadCommand)
}

// A transaction is one entry: when any operation of the branch that runs
// cannot be applied, the whole entry is refused and nothing changes, not
// the operations before it either.
func TestTxn_AtomicRefusal(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(puts("x", "1", "y", "2"))
	ghost := Put([]byte("z"), []byte("3"))
	ghost.Session = "gone"
	h.mustRefuse(txn(Txn{Success: []TxnOp{Put([]byte("x"), []byte("new")), Delete([]byte("y")), ghost}}), ErrSessionNotFound)
	// A malformed operation refuses the entry even in the branch that
	// does not run.
	h.mustRefuse(txn(Txn{Success: []TxnOp{Put([]byte("x"), []byte("new"))}, Failure: []TxnOp{{Type: TxnPut}}}), ErrBadCommand)
	// A failed compare is no refusal: the failure branch runs.
	res := h.mustApply(txn(Txn{Compare: []Compare{CAS([]byte("x"), 1)}, Success: []TxnOp{ghost}, Failure: []TxnOp{Put([]byte("x"), []byte("f"))}}))
	if kv, _ := h.get("x"); res.Txn.Succeeded || string(kv.Value) != "f" {
		t.Fatalf("failure branch: %+v, x %+v", res.Txn, kv)
	}
	// The writer's session must exist too.
	c := puts("x", "1")
	c.Session = "gone"
	h.mustRefuse(c, ErrSessionNotFound)
}

// At most MaxTxnOps compares and operations, both branches counted.
func TestTxn_OperationBound(t *testing.T) {
	h := newHarness(t)
	build := func(compares, success, failure int) Command {
		var tx Txn
		for i := range compares {
			tx.Compare = append(tx.Compare, CAS([]byte(fmt.Sprint("c", i)), 0))
		}
		for i := range success {
			tx.Success = append(tx.Success, Put([]byte(fmt.Sprint("s", i)), nil))
		}
		for i := range failure {
			tx.Failure = append(tx.Failure, Get([]byte(fmt.Sprint("f", i))))
		}
		return txn(tx)
	}
	res := h.mustApply(build(28, 50, 50))
	if len(res.Txn.Results) != 50 || h.f.KVCounts().Keys != 50 {
		t.Fatalf("128 compares and operations: %d results, %d keys", len(res.Txn.Results), h.f.KVCounts().Keys)
	}
	h.mustApply(build(0, MaxTxnOps, 0))
	h.mustRefuse(build(29, 50, 50), ErrBadCommand)
	h.mustRefuse(build(0, 0, MaxTxnOps+1), ErrBadCommand)
}

// The guard: applied only while a holder of the lock holds it with
// exactly that token.
func TestTxn_Guard(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	h.mustApply(create("b", 0))
	guarded := func(lock string, token uint64) Command {
		c := puts("k", fmt.Sprint(token))
		c.Txn.Guard = &Guard{Lock: lock, Token: token}
		return c
	}
	ta := h.mustApply(acquire("a", "L", "", 0)).Token // 3
	h.mustApply(guarded("L", ta))
	h.mustRefuse(guarded("L", ta+100), ErrNotHolder) // a token never granted
	h.mustRefuse(guarded("free", ta), ErrNotHolder)  // a lock nobody holds
	h.mustRefuse(guarded("L", 0), ErrBadCommand)
	h.mustApply(release("a", "L"))
	h.mustRefuse(guarded("L", ta), ErrNotHolder) // released, nobody since
	tb := h.mustApply(acquire("b", "L", "", 0)).Token
	h.mustRefuse(guarded("L", ta), ErrStaleToken) // a higher token since
	h.mustApply(guarded("L", tb))
	// Shared holders: each one's token passes.
	s1 := h.mustApply(acquire("a", "S", Shared, 0)).Token
	s2 := h.mustApply(acquire("b", "S", Shared, 0)).Token
	h.mustApply(guarded("S", s1))
	h.mustApply(guarded("S", s2))
	h.mustApply(release("b", "S"))
	h.mustApply(guarded("S", s1))
	h.mustRefuse(guarded("S", s2), ErrNotHolder) // a lower token still holds
	// An election of the lock's name does not count.
	te := h.mustApply(campaign("a", "E", "v", 0)).Token
	h.mustRefuse(guarded("E", te), ErrNotHolder)
	if kv, _ := h.get("k"); string(kv.Value) != fmt.Sprint(s1) {
		t.Fatalf("k = %q", kv.Value)
	}
}

// Ephemeral keys go in the entry that ends their session, each with its
// delete event; a put without a session detaches a key.
func TestTxn_EphemeralKeys(t *testing.T) {
	h := newHarness(t)
	for _, s := range []string{"a", "b", "c", "d"} {
		h.mustApply(create(s, 0))
	}
	h.mustApply(ephemeral("a", "e1", "1"))
	h.mustApply(ephemeral("a", "e2", "2"))
	h.mustApply(ephemeral("a", "e0", "0"))
	h.mustApply(ephemeral("b", "f", "3"))
	h.mustApply(ephemeral("c", "g", "4"))
	h.mustApply(ephemeral("d", "h", "5"))
	h.mustApply(ephemeral("d", "a-owned-by-d", "6"))
	h.mustApply(puts("e2", "detached")) // 12
	h.mustApply(ephemeral("b", "e0", "moved to b"))
	if got := fmt.Sprintf("%q %q", h.f.KeysOf("a"), h.f.KeysOf("b")); got != `["e1"] ["e0" "f"]` {
		t.Fatalf("keys of a, b: %s", got)
	}
	h.mustRefuse(ephemeral("zz", "k", "v"), ErrSessionNotFound)
	mark := h.f.KVIndex()
	type ending struct {
		c    Command
		want []string // the events of the ending entry
	}
	for _, e := range []ending{
		{destroy("a"), []string{"delete e1"}},
		{expire("b"), []string{"delete e0", "delete f"}},
		{expireAll("zz", "d", "c"), []string{"delete a-owned-by-d", "delete h", "delete g"}},
	} {
		res := h.mustApply(e.c)
		page, err := h.f.Events(mark, nil, []byte{0}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range page.Events {
			if ev.Index != res.Index || ev.KV.ModifyIndex != res.Index || ev.Prev == nil || ev.Prev.Session == "" {
				t.Fatalf("%v: event %+v", e.c.Op, ev)
			}
			got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.KV.Key))
		}
		if !slices.Equal(got, e.want) {
			t.Fatalf("%v: events %v, want %v", e.c.Op, got, e.want)
		}
		mark = res.Index
		checkInvariants(t, h.f)
	}
	if page := h.f.Range(nil, []byte{0}, nil, 0, true, false); !slices.Equal(keysOfKVs(page.KVs), []string{"e2"}) {
		t.Fatalf("keys left: %v", keysOfKVs(page.KVs))
	}
	if kv, _ := h.get("e2"); kv.Session != "" || kv.Version != 2 {
		t.Fatalf("detached key %+v", kv)
	}
}

// Sequential names are strictly increasing for ever: across snapshots and
// restores, skipping names taken by plain puts.
func TestTxn_SequentialNames(t *testing.T) {
	h := newHarness(t)
	var names []string
	seq := func() {
		t.Helper()
		res := h.mustApply(sequential("q-"))
		names = append(names, string(res.Txn.Results[0].KV.Key))
	}
	seq()
	seq()
	h.mustApply(puts("q-00000000000000000004", "taken"))
	seq()
	seq() // skips 4
	h.mustApply(dels(names...))
	b := mustSnapshot(t, h.f)
	h.f = mustRestore(t, b)
	seq() // after a restore, and with every earlier name deleted
	want := []string{"q-00000000000000000001", "q-00000000000000000002", "q-00000000000000000003", "q-00000000000000000005", "q-00000000000000000006"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	res := h.mustApply(sequential(""))
	if got := string(res.Txn.Results[0].KV.Key); got != "00000000000000000007" {
		t.Fatalf("empty prefix: %q", got)
	}
}

// A transaction with a request number is applied once: a retry is
// answered ErrRepeated and changes nothing. Numbers are kept per first key,
// so a session's writes to different keys do not refuse each other.
func TestTxn_RequestNumbers(t *testing.T) {
	h := newHarness(t)
	h.mustApply(createW("a", 2))
	h.mustApply(create("u", 0)) // unbounded
	numbered := func(c Command, session string, seq uint64) Command {
		c.Session, c.Seq = session, seq
		return c
	}
	h.mustApply(numbered(puts("x", "1"), "a", 1))
	h.mustRefuse(numbered(puts("x", "1"), "a", 1), ErrRepeated)
	h.mustApply(numbered(puts("y", "2"), "a", 3))
	h.mustApply(numbered(puts("z", "late"), "a", 2)) // another key, a lower number: applied
	h.mustRefuse(numbered(puts("x", "again"), "a", 1), ErrRepeated)
	// A compare's key names the transaction.
	h.mustApply(numbered(txn(Txn{Compare: []Compare{CAS([]byte("x"), 0)}, Success: []TxnOp{Put([]byte("x"), nil)}}), "a", 4))
	// The window keeps 2 idle numbers; the others go to the floor, which
	// still refuses their retries.
	for i, k := range []string{"p", "q", "r"} {
		h.mustApply(numbered(puts(k, "v"), "a", uint64(10+i)))
	}
	last, floor := seqTableOf(h.f, "a")
	if len(last) != 2 || floor != 10 {
		t.Fatalf("table %v floor %d", last, floor)
	}
	h.mustRefuse(numbered(puts("x", "late"), "a", 4), ErrRepeated)
	h.mustRefuse(numbered(puts("p", "late"), "a", 10), ErrRepeated)
	h.mustApply(numbered(puts("p", "new"), "a", 13))
	for i := range 20 {
		h.mustApply(numbered(puts(fmt.Sprint("k", i), "v"), "u", uint64(i+1)))
	}
	if last, floor := seqTableOf(h.f, "u"); len(last) != 20 || floor != 0 {
		t.Fatalf("unbounded table: %d numbers, floor %d", len(last), floor)
	}
	h.mustRefuse(numbered(puts("k0", "v"), "u", 1), ErrRepeated)
	h.mustRefuse(numbered(puts("k0", "v"), "nobody", 1), ErrSessionNotFound)
	h.mustRefuse(numbered(puts("k0", "v"), "", 1), ErrBadCommand)
	// The numbers survive a snapshot; a session's end drops them.
	h.f = mustRestore(t, mustSnapshot(t, h.f))
	h.mustRefuse(numbered(puts("k0", "v"), "u", 1), ErrRepeated)
	checkInvariants(t, h.f)
}

// Range pages follow their cursor through every key once, in order.
func TestRange_PagesFollowTheCursor(t *testing.T) {
	h := newHarness(t)
	var want []string
	for i := range 50 {
		k := fmt.Sprintf("p/%03d", i)
		want = append(want, k)
		h.mustApply(puts(k, "v", fmt.Sprint("q", i), "other"))
	}
	var got []string
	var after []byte
	for pages := 0; ; pages++ {
		page := h.f.Range([]byte("p/"), PrefixEnd([]byte("p/")), after, 7, false, false)
		got = append(got, keysOfKVs(page.KVs)...)
		if page.Index != h.f.KVIndex() || len(page.KVs) > 7 || pages > 10 {
			t.Fatalf("page %d: %+v", pages, page)
		}
		if !page.More {
			break
		}
		after = page.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages listed %v", got)
	}
	if n := h.f.Range([]byte("p/"), PrefixEnd([]byte("p/")), []byte("p/040"), 0, false, true).Count; n != 9 {
		t.Fatalf("count after p/040: %d", n)
	}
	if p := h.f.Range([]byte("p/007"), nil, nil, 0, false, false); !slices.Equal(keysOfKVs(p.KVs), []string{"p/007"}) {
		t.Fatalf("one key: %+v", p)
	}
	if p := h.f.Range([]byte("p/007"), nil, []byte("p/007"), 0, false, false); len(p.KVs) != 0 {
		t.Fatalf("one key after itself: %+v", p)
	}
	if kv, ok := h.f.Get([]byte("nope")); ok || kv.ModifyIndex != h.f.KVIndex() {
		t.Fatalf("missing key %+v", kv)
	}
}

// checkKV fails the test if the namespace breaks a rule the entries keep:
// its counts, owners (sessions and tokens) and history agree with its
// keys.
func checkKV(t testing.TB, st *state) {
	t.Helper()
	k := st.kv
	owned := map[string]map[string]struct{}{}
	usage := map[string]KeyUsage{}
	size := 0
	k.tree.Ascend(func(kv *KV) bool {
		if kv.Owner != "" {
			u := usage[kv.Owner]
			u.Keys, u.Bytes = u.Keys+1, u.Bytes+kv.size()
			usage[kv.Owner] = u
		}
		c := kv.clone()
		if err := validKV(&c, 1, k.index); err != nil || (kv.Value != nil && len(kv.Value) == 0) {
			t.Fatalf("key %q: %v", kv.Key, err)
		}
		if kv.Session != "" {
			if !st.sessions.has(kv.Session) {
				t.Fatalf("key %q owned by a session that is gone: %q", kv.Key, kv.Session)
			}
			addRef(owned, kv.Session, string(kv.Key))
		}
		size += len(kv.Key) + len(kv.Value)
		return true
	})
	if size != k.bytes || !reflect.DeepEqual(owned, k.owned) {
		t.Fatalf("bytes %d (want %d) or owners %v (want %v) out of step", k.bytes, size, k.owned, owned)
	}
	if !reflect.DeepEqual(usage, k.usage) {
		t.Fatalf("usage of tokens %v, want %v", k.usage, usage)
	}
	prev := k.hist.compacted
	k.hist.events.Ascend(func(e *histEvent) bool {
		if e.index <= k.hist.compacted || e.index < prev || e.index > k.index {
			t.Fatalf("event of index %d after %d, compacted %d, namespace index %d", e.index, prev, k.hist.compacted, k.index)
		}
		prev = e.index
		return true
	})
	if n := k.hist.events.Len(); n > k.hist.limits.MaxEvents || k.hist.added {
		t.Fatalf("history of %d events over %d, or not settled", n, k.hist.limits.MaxEvents)
	}
}

// A snapshot keeps the keys, their owners, the counter, the index and the
// history; a version-4 snapshot restores with an empty namespace, and one
// that carries keys is refused.
func TestSnapshot_KVRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	v4 := strings.Replace(string(mustSnapshot(t, h.f)), fmt.Sprintf(`"version":%d`, snapshotVersion), `"version":4`, 1)
	h.mustApply(ephemeral("a", "e", "1"))
	h.mustApply(sequential("s/"))
	h.mustApply(puts("k", "\x00\xff binary", "k2", ""))
	h.mustApply(dels("k2"))
	snap := mustSnapshot(t, h.f)
	g := mustRestore(t, snap)
	checkInvariants(t, g)
	if again := mustSnapshot(t, g); !bytes.Equal(snap, again) {
		t.Fatalf("round trip differs:\n%s\n%s", snap, again)
	}
	for _, f := range []*FSM{h.f, g} {
		kv, _ := f.Get([]byte("k"))
		page, err := f.Events(0, nil, []byte{0}, 100)
		if string(kv.Value) != "\x00\xff binary" || err != nil || len(page.Events) != 5 || f.KVIndex() != 5 {
			t.Fatalf("k %+v, events %v (%v), index %d", kv, keysOfEvents(page.Events), err, f.KVIndex())
		}
		if got := fmt.Sprintf("%q", f.KeysOf("a")); got != `["e"]` {
			t.Fatalf("keys of a: %s", got)
		}
	}
	g.ApplyCommand(6, Command{Op: OpDestroySession, Session: "a", Now: t0})
	if _, ok := g.Get([]byte("e")); ok {
		t.Fatal("the restored ephemeral key outlived its session")
	}
	if res := g.ApplyCommand(7, Command{Op: OpTxn, Now: t0, Txn: &Txn{Success: []TxnOp{{Type: TxnPut, Key: []byte("s/"), Sequential: true}}}}); string(res.Txn.Results[0].KV.Key) != "s/00000000000000000002" {
		t.Fatalf("sequential after restore: %+v", res.Txn.Results[0].KV)
	}
	old := mustRestore(t, []byte(v4))
	if c := old.KVCounts(); c != (KVCounts{}) || old.KVIndex() != 0 {
		t.Fatalf("a version-4 snapshot restored keys: %+v", c)
	}
	withKeys := strings.Replace(string(snap), fmt.Sprintf(`"version":%d`, snapshotVersion), `"version":4`, 1)
	if err := New().Restore(strings.NewReader(withKeys)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("version 4 with keys: %v", err)
	}
}

// A View taken between entries keeps the keys and the history as they
// were, while later entries change them.
func TestView_KVFrozenWhileEntriesApply(t *testing.T) {
	h := newHarness(t)
	for i := range 200 {
		h.mustApply(puts(fmt.Sprint("k", i), "before"))
	}
	v := h.f.View()
	want := mustSnapshot(t, h.f)
	for i := range 200 {
		h.mustApply(puts(fmt.Sprint("k", i), "after"))
		if i%3 == 0 {
			h.mustApply(dels(fmt.Sprint("k", i)))
		}
	}
	got, err := v.Marshal()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the view changed (%v)", err)
	}
}

// randomTxn draws a transaction for randomLog over a few keys: compares
// of every target, puts (ephemeral under a session that may not exist,
// sequential), deletes of keys and prefixes, gets, and sometimes a guard
// naming the lock l0 with its holder's token, a stale one or a made-up
// one.
func randomTxn(rng *rand.Rand, session func() string, scratch *FSM) *Txn {
	keys := []string{"a", "a/1", "a/2", "b", "b/1"}
	key := func() []byte { return []byte(keys[rng.IntN(len(keys))]) }
	ops := func() []TxnOp {
		var out []TxnOp
		for range rng.IntN(4) {
			switch rng.IntN(8) {
			case 0, 1, 2:
				op := Put(key(), fmt.Appendf(nil, "v%d", rng.IntN(3)))
				if rng.IntN(3) == 0 {
					op.Session = session()
				}
				out = append(out, op)
			case 3:
				out = append(out, TxnOp{Type: TxnPut, Key: []byte("q/"), Sequential: true})
			case 4:
				out = append(out, Delete(key()))
			case 5:
				out = append(out, prefixOp(TxnDelete, string(key()[:1])))
			case 6:
				out = append(out, TxnOp{Type: TxnGet, Key: nil, End: []byte{0}, Limit: rng.IntN(3)})
			default:
				out = append(out, TxnOp{Type: TxnGet, Key: key(), Limit: -rng.IntN(2)}) // sometimes malformed
			}
		}
		return out
	}
	t := &Txn{Success: ops(), Failure: ops()}
	targets := []CompareTarget{TargetValue, TargetVersion, TargetCreate, TargetModify, TargetSession, TargetExists}
	for range rng.IntN(3) {
		c := Compare{Key: key(), Target: targets[rng.IntN(len(targets))], Op: []CompareOp{Equal, NotEqual, Less, Greater}[rng.IntN(4)]}
		switch c.Target {
		case TargetValue:
			c.Value = fmt.Appendf(nil, "v%d", rng.IntN(3))
		case TargetSession:
			c.Session = session()
		case TargetExists:
			c.Number = uint64(rng.IntN(2))
		default:
			c.Number = uint64(rng.IntN(int(scratch.KVIndex()) + 2))
		}
		t.Compare = append(t.Compare, c)
	}
	if rng.IntN(4) == 0 {
		g := &Guard{Lock: "l0", Token: uint64(rng.IntN(int(scratch.AppliedIndex()) + 1))}
		if l := scratch.Lock("l0"); len(l.Holders) > 0 && rng.IntN(2) == 0 {
			g.Token = l.Holders[0].Token
		}
		t.Guard = g
	}
	return t
}
