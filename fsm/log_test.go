package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// randomLog returns n encoded entries drawn from a fixed seed: sessions
// coming and going, acquires of every kind (semaphores' too, with limits
// that agree, conflict or are out of bounds), releases, expiries, elections,
// timers running out and undecodable entries. The first quarter are
// version-1 entries, ticking by the wall clock as older builds did; the
// rest name the pending timers of the state so far (seen through a
// scratch FSM), some of them stale.
func randomLog(t *testing.T, seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	scratch := New()
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	// live tracks which sessions exist, so most commands name one that
	// does and get past the first check.
	live := map[string]bool{}
	session := func() string {
		if ids := slices.Sorted(maps.Keys(live)); len(ids) > 0 && rng.IntN(10) > 0 {
			return ids[rng.IntN(len(ids))]
		}
		return fmt.Sprint("s", rng.IntN(7))
	}
	lock := func() string { return pick("l0", "l1", "l2") }
	// Semaphores draw from a stream of their own, so that the rest of
	// the log is drawn as before they existed.
	semRng := rand.New(rand.NewPCG(seed, 2))
	semaphore := func(v1 bool) bool { return !v1 && semRng.IntN(3) == 0 }
	election := func() string { return pick("e0", "e1") }
	wait := func() time.Duration {
		return []time.Duration{0, 0, 2 * time.Second, 5 * time.Second, 20 * time.Second, -1}[rng.IntN(6)]
	}
	mode := func() Mode { return Mode(pick("", "exclusive", "shared", "shared", "bogus")) }
	// Transactions' owners draw from a stream of their own too: tokens
	// with tight limits, one without, none, and one that does not exist.
	ownRng := rand.New(rand.NewPCG(seed, 3))
	tokens := false
	now := t0
	var log [][]byte
	for len(log) < n {
		v1 := len(log) < n/4
		if !v1 && !tokens {
			tokens = true
			for _, c := range []Command{limitedToken("t0", 2, 0), limitedToken("t1", 0, 12), limitedToken("t2", 0, 0)} {
				c.Now = now
				b, err := Encode(c)
				if err != nil {
					t.Fatal(err)
				}
				log = append(log, b)
				scratch.Apply(uint64(len(log)), b)
			}
		}
		now = now.Add(time.Duration(rng.IntN(600)) * time.Millisecond)
		c := Command{Now: now, Session: session()}
		draws := 125 // the last 25 are transactions, which version 1 lacks
		if v1 {
			draws = 100
		}
		switch r := rng.IntN(draws); {
		case r >= 100 && !v1:
			c.Op, c.Txn = OpTxn, randomTxn(rng, session, scratch)
			c.Owner = []string{"", "t0", "t0", "t1", "t1", "t2", "gone"}[ownRng.IntN(7)]
		case r < 8:
			c.Op, c.Session, c.TTL = OpCreateSession, fmt.Sprint("s", rng.IntN(7)), time.Duration(rng.IntN(4))*time.Second
			c.LockDelay = []time.Duration{0, 2 * time.Second, 5 * time.Second}[rng.IntN(3)]
			if c.TTL > 0 {
				live[c.Session] = true
			}
		case r < 38:
			c.Op, c.Name, c.Mode, c.Wait = OpAcquire, lock(), mode(), wait()
			if semaphore(v1) {
				c.Name = []string{"s0", "s1"}[semRng.IntN(2)]
				c.Limit = []int{2, 2, 2, 3, 1, 0, -1, MaxLimit + 1}[semRng.IntN(8)]
				c.Mode = []Mode{"", "", Exclusive, Shared}[semRng.IntN(4)]
			}
		case r < 46:
			c.Op, c.Name = OpRelease, lock()
		case r < 53:
			c.Op, c.Name = OpLetGo, lock()
			// A semaphore the session holds, rather than a lock it may
			// not: semaphores' slots go round.
			if held, _ := scratch.SessionHolds(c.Session); !v1 && len(held) > 0 && held[0][0] == 's' && semRng.IntN(2) == 0 {
				c.Name = held[0]
			}
		case r < 56:
			c.Op, c.Name = OpCancelWait, lock()
		case r < 64 && v1:
			c.Op = OpTick
		case r < 64:
			c.Op = OpTimersDue
			timers := scratch.Timers()
			for len(timers) > 0 && (len(c.Timers) == 0 || rng.IntN(2) == 0) {
				tm := timers[rng.IntN(len(timers))]
				if rng.IntN(8) == 0 {
					tm.Armed += uint64(rng.IntN(3)) // usually stale
				}
				c.Timers = append(c.Timers, tm.TimerRef)
			}
			if len(c.Timers) == 0 {
				c.Timers = []TimerRef{{Name: lock(), Armed: uint64(rng.IntN(len(log) + 1))}}
			}
		case r < 67 && !v1 && rng.IntN(2) == 0:
			c.Op, c.Sessions = OpExpireSessions, []string{c.Session, session(), session()}
			for _, id := range c.Sessions {
				delete(live, id)
			}
		case r < 67:
			c.Op = OpExpireSession
			delete(live, c.Session)
		case r < 69:
			c.Op = OpDestroySession
			delete(live, c.Session)
		case r < 78:
			c.Op, c.Name, c.Value, c.Wait = OpCampaign, election(), fmt.Sprint("v", rng.IntN(9)), wait()
		case r < 81:
			c.Op, c.Name, c.Value = OpProclaim, election(), fmt.Sprint("p", rng.IntN(9))
		case r < 85:
			c.Op, c.Name = OpResign, election()
		case r < 87:
			c.Op, c.Name = OpCancelCampaign, election()
		case r < 90:
			c.Op, c.Member = OpSetMember, &Member{ID: pick("n1", "n2", ""), Peer: pick("p1", "p2")}
		case r < 92:
			c.Op, c.Member = OpRemoveMember, &Member{ID: pick("n1", "n2")}
		case r < 96:
			log = append(log, []byte{Version, byte(rng.IntN(256)), byte(rng.IntN(256))})
			scratch.Apply(uint64(len(log)), log[len(log)-1])
			continue
		default:
			c.Op = Op(15 + rng.IntN(10))
		}
		version := Version
		if v1 {
			version = version1
		} else if rng.IntN(2) == 0 {
			// Request numbers, new and repeated, and sessions with small
			// windows, so that numbers are dropped into floors.
			c.Seq, c.SeqWindow = uint64(rng.IntN(len(log)+1)), rng.IntN(3)
		}
		b, err := encodeVersion(c, version)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		log = append(log, b)
		scratch.Apply(uint64(len(log)), b)
	}
	return log
}

// describe renders a Result completely, so two can be compared as strings.
func describe(r Result) string {
	var s any
	if r.Session != nil {
		s = *r.Session
	}
	txn, err := json.Marshal(r.Txn)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%d %v %d %v %v %v %+v %+v %s", r.Index, r.Granted, r.Token, r.Err, r.Released, r.Resigned, s, r.Expired, txn)
}

// outcomes counts what a log did, to prove the random test exercised
// the interesting paths rather than refusing everything.
type outcomes map[string]int

func (o outcomes) add(f *FSM, index uint64, data []byte, r Result) {
	var de *DelayError
	if errors.As(r.Err, &de) && de.Ref.Slot {
		o["slot delay"]++
	}
	if errors.Is(r.Err, ErrLimitConflict) {
		o["limit conflict"]++
	}
	switch {
	case errors.As(r.Err, &de):
		o["delay"]++
	case errors.Is(r.Err, ErrLockHeld):
		o["held"]++
	case errors.Is(r.Err, ErrBadCommand):
		o["bad"]++
	case r.Err != nil:
		o["other refusal"]++
	case r.Granted && r.Token == index:
		o["granted"]++
	case r.Txn != nil && r.Txn.Succeeded:
		o["txn succeeded"]++
	case r.Txn != nil:
		o["txn failed"]++
	}
	c, err := Decode(data)
	switch {
	case err != nil || c.Op != OpTxn:
		if page, err := f.Events(index-1, nil, []byte{0}, 1); err == nil && len(page.Events) > 0 {
			o["ephemeral deleted"]++
		}
	case errors.Is(r.Err, ErrRepeated):
		o["txn repeated"]++
	case c.Txn != nil && c.Txn.Guard != nil && (r.Err == nil || errors.Is(r.Err, ErrStaleToken)):
		o["txn guard"]++
	}
	if err != nil || c.Op == OpAcquire || c.Op == OpCampaign {
		return
	}
	for _, l := range append(f.Locks(), f.Elections()...) {
		for _, h := range l.Holders {
			if h.Token == index {
				o["hand-off by "+c.Op.String()]++
				if l.Limit > 0 {
					o["slot hand-off by "+c.Op.String()]++
				}
			}
		}
		if l.Limit > 1 && len(l.Holders) > 1 {
			o["semaphore holders"]++
		}
	}
}

func TestApply_SameLogSameState(t *testing.T) {
	const n = 4000 // a fraction of a second; shorter logs miss some hand-off paths
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			log := randomLog(t, seed, n)
			a, b := New(), New()
			seen := outcomes{}
			var restored *FSM
			for i, data := range log {
				index := uint64(i + 1)
				ra := a.Apply(index, data)
				seen.add(a, index, data, ra)
				checkInvariants(t, a)
				if i == n/2 {
					restored = mustRestore(t, mustSnapshot(t, b))
					b = restored
				}
				if rb := b.Apply(index, data); describe(ra) != describe(rb) {
					t.Fatalf("entry %d: results differ:\n%s\n%s", index, describe(ra), describe(rb))
				}
			}
			checkInvariants(t, b)
			if sa, sb := mustSnapshot(t, a), mustSnapshot(t, b); !bytes.Equal(sa, sb) {
				t.Fatalf("snapshots differ:\n%s\n%s", sa, sb)
			}
			t.Logf("outcomes: %v", seen)
			for _, k := range []string{"granted", "held", "delay", "bad", "hand-off by release", "hand-off by tick", "hand-off by timers-due", "hand-off by expire-session",
				"txn succeeded", "txn failed", "txn repeated", "txn guard", "ephemeral deleted", "limit conflict", "semaphore holders"} {
				if seen[k] == 0 {
					t.Errorf("log never produced %q: %v", k, seen)
				}
			}
		})
	}
}

func TestApply_UndecodableEntry(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"one byte", []byte{Version}},
		{"garbage", []byte("garbage")},
		{"unknown version", append([]byte{Version + 1, byte(OpTick)}, `{}`...)},
		{"version zero", append([]byte{0, byte(OpAcquire)}, `{}`...)},
		{"unknown op", append([]byte{Version, 99}, `{}`...)},
		{"op after the last", append([]byte{Version, byte(OpExpireSessions + 1)}, `{}`...)},
		{"version-2 op in a version-1 entry", append([]byte{version1, byte(OpTimersDue)}, `{"timers":[{"name":"x","armed":1}]}`...)},
		{"let-go in a version-1 entry", append([]byte{version1, byte(OpLetGo)}, `{"session":"a","name":"x"}`...)},
		{"expire-sessions in a version-1 entry", append([]byte{version1, byte(OpExpireSessions)}, `{"sessions":["a"]}`...)},
		{"op zero", append([]byte{Version, 0}, `{}`...)},
		{"bad json", append([]byte{Version, byte(OpAcquire)}, `{"session":`...)},
		{"bad time", append([]byte{Version, byte(OpTick)}, `{"now":"yesterday"}`...)},
		{"wrong type", append([]byte{Version, byte(OpAcquire)}, `{"wait":"1s"}`...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := refusalState(t)
			before := mustStateJSON(t, h.f)
			res := h.f.Apply(h.idx+1, tt.data)
			if !errors.Is(res.Err, ErrBadCommand) || res.Index != h.idx+1 {
				t.Fatalf("result %+v, want ErrBadCommand", res)
			}
			if !bytes.Equal(before, mustStateJSON(t, h.f)) || h.f.AppliedIndex() != h.idx+1 {
				t.Fatal("undecodable entry changed more than the applied index")
			}
		})
	}
}

func TestChanged_FiresOnApply(t *testing.T) {
	h := newHarness(t)
	ch := h.f.Changed()
	select {
	case <-ch:
		t.Fatal("closed before any change")
	default:
	}
	h.mustApply(create("a", 0))
	select {
	case <-ch:
	default:
		t.Fatal("not closed by apply")
	}
	next := h.f.Changed()
	h.apply(destroy("nobody")) // a refusal still moves the applied index
	select {
	case <-next:
	default:
		t.Fatal("not closed by a refused apply")
	}
}

// TestChanged_BlockingReader runs a blocking-query reader against the
// applier; under -race it also checks the locking.
func TestChanged_BlockingReader(t *testing.T) {
	h := newHarness(t)
	h.mustApply(create("a", 0))
	var wg sync.WaitGroup
	seen := make(chan uint64, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ch := h.f.Changed()
			if l := h.f.Lock("x"); l.ModifyIndex >= 21 {
				seen <- l.ModifyIndex
				return
			}
			<-ch
		}
	}()
	for range 10 {
		h.mustApply(acquire("a", "x", "", 0))
		h.mustApply(release("a", "x"))
	}
	wg.Wait()
	if got := <-seen; got != 21 {
		t.Fatalf("reader saw modify index %d, want 21", got)
	}
}
