package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// readsOf collects every read the FSM offers, for comparing two FSMs.
func readsOf(f *FSM, names []string) map[string]any {
	next, ok := f.NextDeadline()
	r := map[string]any{
		"applied":   f.AppliedIndex(),
		"sessions":  f.Sessions(),
		"locks":     f.Locks(),
		"elections": f.Elections(),
		"members":   f.Members(),
		"locksIdx":  f.LocksIndex(),
		"elecIdx":   f.ElectionsIndex(),
		"next":      []any{next, ok},
	}
	for _, n := range names {
		l, e := f.SessionHolds(n)
		s, ok := f.Session(n)
		r["holds/"+n] = []any{l, e, s, ok}
		r["lock/"+n] = f.Lock(n)
		r["election/"+n] = f.Election(n)
	}
	return r
}

func TestSnapshot_RoundTrip(t *testing.T) {
	h := refusalState(t)
	h.mustApply(acquire("c", "sh", Shared, 0))
	h.mustApply(acquire("c", "q", "", 0))
	h.mustApply(acquire("a", "q", "", time.Minute))
	snap := mustSnapshot(t, h.f)
	g := mustRestore(t, snap)
	checkInvariants(t, g)
	if again := mustSnapshot(t, g); !bytes.Equal(snap, again) {
		t.Fatalf("snapshot of restored state differs:\n%s\n%s", snap, again)
	}
	names := []string{"a", "b", "c", "d", "x", "sh", "dl", "e", "q", "none"}
	if a, b := readsOf(h.f, names), readsOf(g, names); !reflect.DeepEqual(a, b) {
		t.Fatalf("reads differ:\n%v\n%v", a, b)
	}
	if !g.Check("x", 5) || g.Check("x", 6) {
		t.Fatal("Check after restore")
	}
	for _, c := range []Command{expire("c"), tick(), destroy("a")} {
		h.advance(time.Minute)
		g.ApplyCommand(h.idx+1, Command{Op: c.Op, Session: c.Session, Now: h.now})
		h.mustApply(c)
		checkInvariants(t, g)
		if a, b := mustSnapshot(t, h.f), mustSnapshot(t, g); !bytes.Equal(a, b) {
			t.Fatalf("after %v on both: states differ:\n%s\n%s", c.Op, a, b)
		}
	}
	if len(g.Locks()) != 0 || len(g.Elections()) != 0 {
		t.Fatalf("expire after restore left objects behind: %+v %+v", g.Locks(), g.Elections())
	}
}

func TestRestore_ReplacesCompletely(t *testing.T) {
	src := newHarness(t)
	src.mustApply(create("s1", 0))
	src.mustApply(acquire("s1", "x", "", 0))
	snap := mustSnapshot(t, src.f)

	dst := refusalState(t)
	changed := dst.f.Changed()
	if err := dst.f.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Restore did not fire Changed")
	}
	checkInvariants(t, dst.f)
	names := []string{"a", "b", "c", "d", "s1", "x", "e", "sh", "dl"}
	if a, b := readsOf(src.f, names), readsOf(dst.f, names); !reflect.DeepEqual(a, b) {
		t.Fatalf("reads differ after restore:\n%v\n%v", a, b)
	}
	// The old sessions are gone for commands too, not only for reads.
	if res := dst.f.ApplyCommand(3, destroy("a")); !errors.Is(res.Err, ErrSessionNotFound) {
		t.Fatalf("destroy of an old session: %v", res.Err)
	}
}

func TestRestore_RejectsBadInput(t *testing.T) {
	good := mustSnapshot(t, refusalState(t).f)
	// mutate changes a decoded copy of good; x is lock "x" in it, which
	// has a holder and a waiter.
	mutate := func(change func(f *snapshotFile, x *Lock)) string {
		var file snapshotFile
		if err := json.Unmarshal(good, &file); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(file.Locks, func(l Lock) bool { return l.Name == "x" })
		change(&file, &file.Locks[i])
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"garbage", "\x00\x01garbage"},
		{"null", "null"},
		{"no version", "{}"},
		{"unknown version", strings.Replace(string(good), `"version":1`, `"version":2`, 1)},
		{"truncated", string(good[:len(good)/2])},
		{"trailing data", string(good) + "{}"},
		{"duplicate session", mutate(func(f *snapshotFile, x *Lock) { f.Sessions = append(f.Sessions, f.Sessions[0]) })},
		{"session without ttl", mutate(func(f *snapshotFile, x *Lock) { f.Sessions[0].TTL = 0 })},
		{"holder without session", mutate(func(f *snapshotFile, x *Lock) { x.Holders[0].Session = "ghost" })},
		{"holder without token", mutate(func(f *snapshotFile, x *Lock) { x.Holders[0].Token = 0 })},
		{"two exclusive holders", mutate(func(f *snapshotFile, x *Lock) { x.Holders = append(x.Holders, Holder{Session: "c", Token: 9}) })},
		{"unknown mode", mutate(func(f *snapshotFile, x *Lock) { x.Mode = "bogus" })},
		{"waiter that also holds", mutate(func(f *snapshotFile, x *Lock) { x.Waiters[0].Session = x.Holders[0].Session })},
		{"shared election", mutate(func(f *snapshotFile, x *Lock) { f.Elections[0].Mode = Shared })},
		{"empty lock name", mutate(func(f *snapshotFile, x *Lock) { x.Name = "" })},
		{"duplicate lock", mutate(func(f *snapshotFile, x *Lock) { f.Locks = append(f.Locks, *x) })},
		{"empty object", mutate(func(f *snapshotFile, x *Lock) { f.Locks = append(f.Locks, Lock{Name: "zzz"}) })},
		{"duplicate member", mutate(func(f *snapshotFile, x *Lock) { f.Members = append(f.Members, f.Members[0]) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustApply(create("mine", 0))
			h.mustApply(acquire("mine", "x", "", 0))
			before := mustSnapshot(t, h.f)
			err := h.f.Restore(strings.NewReader(tt.data))
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err %v, want ErrBadSnapshot", err)
			}
			if after := mustSnapshot(t, h.f); !bytes.Equal(before, after) {
				t.Fatalf("failed restore changed the state:\n%s", after)
			}
		})
	}
}
