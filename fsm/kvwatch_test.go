package fsm

import "testing"

// A change of a key wakes the watchers of that key and of the prefixes
// that contain it, and no other: not the watchers of another key or of a
// prefix it lacks. A session's end wakes the watchers of the keys it
// deletes.
func TestWatch_KeysAndPrefixes(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("s", 0))
	w := watchAll(h.f, map[string]Topic{
		"a/x": KeyTopic([]byte("a/x")), "a/y": KeyTopic([]byte("a/y")), "a": KeyTopic([]byte("a")),
		"a/*": PrefixTopic([]byte("a/")), "a/x*": PrefixTopic([]byte("a/x")), "b/*": PrefixTopic([]byte("b/")),
		"*": PrefixTopic(nil), "locks": SpaceTopic(false), "applied": AppliedTopic(),
	})
	steps := []struct {
		c    Command
		want []string
	}{
		{puts("a/x", "1"), []string{"a/x", "a/*", "a/x*", "*", "applied"}},
		{puts("a/xy", "1"), []string{"a/*", "a/x*", "*", "applied"}},
		{puts("c", "1"), []string{"*", "applied"}},                            // an unrelated key wakes no key or prefix watcher
		{puts("a", "1"), []string{"a", "*", "applied"}},                       // "a" is not under "a/"
		{puts("b", "1"), []string{"*", "applied"}},                            // nor "b" under "b/"
		{txn(Txn{Success: []TxnOp{Get([]byte("a/x"))}}), []string{"applied"}}, // a read changes nothing
		{dels("nope"), []string{"applied"}},
		{txn(Txn{Success: []TxnOp{prefixOp(TxnDelete, "a/")}}), []string{"a/x", "a/*", "a/x*", "*", "applied"}},
		{ephemeral("s", "b/e", "1"), []string{"b/*", "*", "applied"}},
		{destroy("s"), []string{"b/*", "*", "applied"}},
		{acquire("zz", "l", "", 0), []string{"applied"}},
	}
	for i, s := range steps {
		h.apply(s.c)
		if got := w.fired(); !sameSet(got, s.want...) {
			t.Fatalf("step %d: woke %v, want %v", i, got, s.want)
		}
	}
	// Giving up every watch leaves no prefix length to look up.
	f := New()
	_, done1 := f.Watch(PrefixTopic([]byte("p/")))
	_, done2 := f.Watch(PrefixTopic([]byte("p/")))
	ch, _ := f.Watch(PrefixTopic([]byte("q")))
	done1()
	done2()
	f.ApplyCommand(1, Command{Op: OpTxn, Now: t0, Txn: &Txn{Success: []TxnOp{Put([]byte("q1"), nil)}}})
	if !closed(ch) || len(f.watch.prefixLens) != 0 || len(f.watch.m) != 0 {
		t.Fatalf("watchers left: %v %v", f.watch.prefixLens, f.watch.m)
	}
}
