package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// readsOf collects every read the FSM offers, for comparing two FSMs.
func readsOf(f *FSM, names []string) map[string]any {
	r := map[string]any{
		"applied":   f.AppliedIndex(),
		"sessions":  f.Sessions(),
		"locks":     f.Locks(),
		"elections": f.Elections(),
		"members":   f.Members(),
		"locksIdx":  f.LocksIndex(),
		"elecIdx":   f.ElectionsIndex(),
		"timers":    f.Timers(),
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
	allDue := func() Command {
		var refs []TimerRef
		for _, tm := range h.f.Timers() {
			refs = append(refs, tm.TimerRef)
		}
		return due(refs...)
	}
	for _, next := range []func() Command{
		allDue, func() Command { return expire("c") }, func() Command { return destroy("a") },
	} {
		c := next()
		h.advance(time.Minute)
		g.ApplyCommand(h.idx+1, Command{Op: c.Op, Session: c.Session, Timers: c.Timers, Now: h.now})
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
		{"unknown version", strings.Replace(string(good), fmt.Sprintf(`"version":%d`, snapshotVersion), fmt.Sprintf(`"version":%d`, snapshotVersion+1), 1)},
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
		{"waiter without a wait", mutate(func(f *snapshotFile, x *Lock) { x.Waiters[0].Wait = 0 })},
		{"waiter without a starting entry", mutate(func(f *snapshotFile, x *Lock) { x.Waiters[0].Since = 0 })},
		{"lock-delay without a length", mutate(func(f *snapshotFile, x *Lock) { x.DelayIndex, x.DelayUntil = 7, t0 })},
		{"lock-delay without a starting entry", mutate(func(f *snapshotFile, x *Lock) { x.Delay, x.DelayUntil = time.Second, t0 })},
		{"lock-delay without a shown end", mutate(func(f *snapshotFile, x *Lock) { x.Delay, x.DelayIndex = time.Second, 7 })},
		{"token after the applied index", mutate(func(f *snapshotFile, x *Lock) { x.Holders[0].Token = f.AppliedIndex + 1 })},
		{"modify index after the space's", mutate(func(f *snapshotFile, x *Lock) { x.ModifyIndex = f.LocksIndex + 1 })},
		{"space index after the applied index", mutate(func(f *snapshotFile, x *Lock) { f.ElectionsIndex = f.AppliedIndex + 1 })},
		{"holders out of grant order", mutate(func(f *snapshotFile, x *Lock) {
			i := slices.IndexFunc(f.Locks, func(l Lock) bool { return l.Name == "sh" })
			sh := &f.Locks[i]
			sh.Holders = append(sh.Holders, Holder{Session: "c", Token: sh.Holders[0].Token - 1})
		})},
		{"waiter behind a free lock", mutate(func(f *snapshotFile, x *Lock) { x.Holders, x.Mode = nil, "" })},
		{"holder acquired after year 9999 in UTC", mutate(func(f *snapshotFile, x *Lock) {
			x.Holders[0].AcquiredAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -3600))
		})},
		{"waiter's deadline before year 0 in UTC", mutate(func(f *snapshotFile, x *Lock) {
			x.Waiters[0].Deadline = time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))
		})},
		{"duplicate member", mutate(func(f *snapshotFile, x *Lock) { f.Members = append(f.Members, f.Members[0]) })},
		{"window out of range", mutate(func(f *snapshotFile, x *Lock) { f.Sessions[0].SeqWindow = MaxSeqWindow + 1 })},
		{"floor of an unbounded session", mutate(func(f *snapshotFile, x *Lock) { f.SeqFloors = map[string]uint64{"a": 3} })},
		{"floor of an unknown session", mutate(func(f *snapshotFile, x *Lock) {
			f.Sessions[0].SeqWindow = 1
			f.SeqFloors = map[string]uint64{"ghost": 3}
		})},
		{"more let-go numbers than the window", mutate(func(f *snapshotFile, x *Lock) {
			f.Sessions[0].SeqWindow = 1
			f.Seqs = map[string]map[string]uint64{f.Sessions[0].ID: {"l/p": 1, "l/q": 2}}
		})},
		{"version 2 with a window", mutate(func(f *snapshotFile, x *Lock) {
			f.Version = 2
			f.Sessions[0].SeqWindow = 4
		})},
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

// A snapshot written before lock-delays and waits were leader timers
// (version 1: no lengths or starting entries recorded) restores with each
// pending one given the longest length the API accepts, and the version-1
// entries that follow it replay by their wall times as before.
func TestRestore_Version1Snapshot(t *testing.T) {
	h := newHarness(t)
	h.v1 = true
	h.mustApply(create("a", 5*time.Second))       // 1
	h.mustApply(create("b", 0))                   // 2
	h.mustApply(acquire("a", "x", "", 0))         // 3
	h.mustApply(acquire("b", "x", "", time.Hour)) // 4
	h.mustApply(acquire("a", "y", "", 0))         // 5
	h.mustApply(expire("a"))                      // 6
	var file snapshotFile
	if err := json.Unmarshal(mustSnapshot(t, h.f), &file); err != nil {
		t.Fatal(err)
	}
	file.Version = 1
	for i := range file.Locks {
		file.Locks[i].Delay, file.Locks[i].DelayIndex = 0, 0
		for j := range file.Locks[i].Waiters {
			file.Locks[i].Waiters[j].Wait, file.Locks[i].Waiters[j].Since = 0, 0
		}
	}
	old, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	g := mustRestore(t, old)
	checkInvariants(t, g)
	want := []Timer{
		{TimerRef{Name: "x", Armed: 6}, time.Minute},
		{TimerRef{Name: "x", Session: "b", Armed: 6}, 5 * time.Minute},
		{TimerRef{Name: "y", Armed: 6}, time.Minute},
	}
	if got := g.Timers(); !slices.Equal(got, want) {
		t.Fatalf("timers of the restored state %v, want %v", got, want)
	}
	// A version-1 tick past the shown end still ends the delay and hands x
	// to b, as it would have on the build that wrote the snapshot.
	h.f = g
	h.advance(6 * time.Second)
	h.mustApply(tick()) // 7
	if x := g.Lock("x"); !slices.Equal(holders(x), []string{"b:7"}) {
		t.Fatalf("x after a version-1 tick: %+v", x)
	}
}

// A View taken between two entries encodes the state as it was then,
// however the entries after it change the state, and whether it is
// encoded at once, while they apply, or after: each encodes to the bytes
// of a replica that applied the log up to that point.
func TestView_FrozenWhileEntriesApply(t *testing.T) {
	log := randomLog(t, 11, 3000)
	f := New()
	type taken struct {
		v    *View
		upTo int
	}
	var views []taken
	var wg sync.WaitGroup
	for i, e := range log {
		f.Apply(uint64(i+1), e)
		if i%97 != 0 {
			continue
		}
		v := f.View()
		views = append(views, taken{v, i + 1})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Marshal(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, tk := range views {
		g := New()
		for i, e := range log[:tk.upTo] {
			g.Apply(uint64(i+1), e)
		}
		got, err := tk.v.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if want := mustSnapshot(t, g); !bytes.Equal(got, want) {
			t.Fatalf("view after entry %d encodes\n%s\nwant\n%s", tk.upTo, got, want)
		}
	}
}

// The same with a state spread over many parts of the maps: every session,
// lock, election and request number changed after the view leaves the
// view as it was.
func TestView_ManyObjectsChangedAfter(t *testing.T) {
	h := newHarness(t)
	const n = 3000
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		h.mustApply(create(id, time.Second))
		h.mustApply(seqd(acquire(id, "l/"+id, "", 0), 1))
		h.mustApply(seqd(campaign(id, "e/"+id, "v", 0), 1))
		if i > 0 {
			h.mustApply(seqd(acquire(id, fmt.Sprintf("l/s%04d", i-1), "", time.Minute), 2))
		}
	}
	v := h.f.View()
	want, err := v.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		switch i % 3 {
		case 0:
			h.mustApply(expire(id))
		case 1:
			h.mustApply(seqd(release(id, "l/"+id), 3))
			h.mustApply(seqd(proclaim(id, "e/"+id, "w"), 4))
		case 2:
			h.mustApply(create(id+"-new", 0))
		}
	}
	checkInvariants(t, h.f)
	if got, err := v.Marshal(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the view changed with the state after it (err %v)", err)
	}
	if now := mustSnapshot(t, h.f); bytes.Equal(now, want) {
		t.Fatal("the state did not change")
	}
	g := mustRestore(t, want)
	checkInvariants(t, g)
	if g.AppliedIndex() != v.AppliedIndex() || len(g.Sessions()) != n {
		t.Fatalf("restored view: applied %d (want %d), %d sessions", g.AppliedIndex(), v.AppliedIndex(), len(g.Sessions()))
	}
}

// testdata/version2-snapshot.json was written by a build whose snapshots
// are version 2. It restores to the state it describes, whose sessions
// keep every request number as that build's did, and encodes as the
// current version with nothing else changed.
func TestRestore_Version2File(t *testing.T) {
	old, err := os.ReadFile("testdata/version2-snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	g := mustRestore(t, old)
	checkInvariants(t, g)
	if q := g.Lock("q"); !slices.Equal(holders(q), []string{"c:14"}) || !slices.Equal(waiters(q), []string{"a"}) {
		t.Fatalf("q: %+v", q)
	}
	if e := g.Election("e"); e.Value != "v3" || !slices.Equal(holders(e), []string{"c:10"}) {
		t.Fatalf("e: %+v", e)
	}
	// The request numbers came back: a late acquire of "gone" by c (number
	// 6, which was applied and then released with 7) is not applied again.
	b, _ := Encode(seqd(acquire("c", "gone", "", 0), 6))
	if res := g.Apply(g.AppliedIndex()+1, b); !errors.Is(res.Err, ErrRepeated) {
		t.Fatalf("late acquire after restore = %+v, want it refused as a repeat", res)
	}
	g = mustRestore(t, old)
	want := strings.Replace(string(old), `"version":2`, fmt.Sprintf(`"version":%d`, snapshotVersion), 1)
	if again := mustSnapshot(t, g); string(again) != want {
		t.Fatalf("restored version-2 snapshot encodes as\n%s", again)
	}
}
