package lease

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// mustApply applies c to f as the entry at index.
func mustApply(t *testing.T, f *fsm.FSM, index uint64, c fsm.Command) {
	t.Helper()
	if res := f.ApplyCommand(index, c); res.Err != nil {
		t.Fatalf("entry %d: %v", index, res.Err)
	}
}

// checkHeap fails the test unless every tracked session not handed to
// expire sits in the heap at the position it records, in heap order.
func checkHeap(t *testing.T, d *deadlines) {
	t.Helper()
	for i, e := range d.due {
		if e.pos != i || d.byID[e.id] != e {
			t.Fatalf("heap[%d] = %s records position %d", i, e.id, e.pos)
		}
		if i > 0 && e.end.Before(d.due[(i-1)/2].end) {
			t.Fatalf("heap[%d] ends before its parent", i)
		}
	}
	if len(d.due)+len(d.handed) != len(d.byID) {
		t.Fatalf("%d in the heap and %d handed, %d tracked", len(d.due), len(d.handed), len(d.byID))
	}
}

// The deadline table answers as a plain map of deadlines would, through a
// long random run of keepalives, sweeps, creations and ends.
func TestDeadlines_AgreeWithAPlainMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Unix(1000, 0)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	d := newDeadlines()
	ends := map[string]int{}    // the model: session -> deadline
	handed := map[string]bool{} // sessions handed to expire
	now := 0
	for step := range 20000 {
		id := fmt.Sprint("s", rng.IntN(60))
		switch r := rng.IntN(100); {
		case r < 30:
			end := now + 1 + rng.IntN(20)
			d.track(id, at(end))
			switch {
			case !handed[id] && ends[id] < end:
				ends[id] = end
			case handed[id]:
			default:
				if _, ok := ends[id]; !ok {
					ends[id] = end
				}
			}
		case r < 70:
			end := now + 1 + rng.IntN(20)
			e, ok := ends[id]
			want := ok && !handed[id] && now < e
			if got := d.extend(id, at(now), at(end)); got != want {
				t.Fatalf("step %d: extend(%s) = %v, want %v (deadline %d, now %d, handed %v)", step, id, got, want, e, now, handed[id])
			}
			if want && end > e {
				ends[id] = end
			}
		case r < 80:
			d.forget(id)
			delete(ends, id)
			delete(handed, id)
		default:
			now += rng.IntN(4)
			limit := 1 + rng.IntN(8)
			got := d.popDue(at(now), limit, nil)
			var due []string
			for s, e := range ends {
				if !handed[s] && e <= now {
					due = append(due, s)
				}
			}
			if len(got) != min(limit, len(due)) {
				t.Fatalf("step %d: popDue at %d, limit %d = %v; due %v", step, now, limit, got, due)
			}
			for i, s := range got {
				if !slices.Contains(due, s) || (i > 0 && ends[s] < ends[got[i-1]]) {
					t.Fatalf("step %d: popDue = %v, not the earliest of %v in order", step, got, due)
				}
				handed[s] = true
			}
			// No session left out ends before one popped.
			for _, s := range due {
				if !handed[s] && len(got) > 0 && ends[s] < ends[got[len(got)-1]] {
					t.Fatalf("step %d: %s (deadline %d) left behind %v", step, s, ends[s], got)
				}
			}
		}
		checkHeap(t, &d)
		if !slices.Equal(slices.Sorted(maps.Keys(d.byID)), slices.Sorted(maps.Keys(ends))) {
			t.Fatalf("step %d: the table tracks %v, the model %v", step, slices.Sorted(maps.Keys(d.byID)), slices.Sorted(maps.Keys(ends)))
		}
		if got := d.handedIDs(nil); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(maps.Keys(handed))) {
			t.Fatalf("step %d: handed %v, want %v", step, got, handed)
		}
	}
}

// Walking the table by ids lists every session once while nothing moves.
func TestDeadlines_IDsWalkEverySession(t *testing.T) {
	d := newDeadlines()
	base := time.Unix(1000, 0)
	var want []string
	for i := range 1000 {
		id := fmt.Sprintf("s%04d", i)
		want = append(want, id)
		d.track(id, base.Add(time.Duration(i%97)*time.Second))
	}
	d.popDue(base.Add(3*time.Second), 10, nil) // some handed to expire
	var ids []string
	walks := 0
	for from := 0; from >= 0; walks++ {
		ids, from = d.ids(from, 64, ids)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) || walks != 1000/64+1 {
		t.Fatalf("walk of %d calls listed %d sessions, want each of %d once", walks, len(ids), len(want))
	}
}

// staggered returns a term over an FSM of n sessions of ttl, created at
// the clock's time and tracked as CreateSession does, one every step.
func staggered(t *testing.T, n int, ttl, step time.Duration) (*leaderTerm, *manualClock, []string) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, f := newTestTerm(clock)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%08d", i)
		mustApply(t, f, uint64(i+1), fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: id, TTL: ttl})
		term.track(id, ttl)
		ids = append(ids, id)
		clock.advance(step)
	}
	return term, clock, ids
}

// A sweep hands over exactly the sessions whose deadline passed, sorted,
// however many there are, and the next sweep lists them again until they
// are forgotten.
func TestLeaderTerm_SweepHandsOverTheDueSessions(t *testing.T) {
	const n = 1000
	term, clock, ids := staggered(t, n, 10*time.Second, 10*time.Millisecond)
	// Session i is due at 10s + 10ms*i from the start; the clock is at 10s.
	if got := term.expired(); !slices.Equal(got, ids[:1]) {
		t.Fatalf("sweep at 10s = %v, want %v", got, ids[:1])
	}
	clock.advance(5 * time.Millisecond)
	if got := term.expired(); !slices.Equal(got, ids[:1]) {
		t.Fatalf("sweep at 10.005s = %v, want %v again", got, ids[:1])
	}
	clock.advance(6 * time.Second) // 16.005s: sessions 0..600, more than one chunk
	got := term.expired()
	if !slices.Equal(got, ids[:601]) || len(got) <= sweepChunk {
		t.Fatalf("sweep at 16.005s = %d sessions from %v, want the first 601 sorted", len(got), got[:min(3, len(got))])
	}
	// The first 300 expire (in the state, then in the table).
	mustApply(t, term.n.fsm, n+1, fsm.Command{Op: fsm.OpExpireSessions, Now: clock.Now(), Sessions: got[:300]})
	term.forget(got[:300]...)
	if again := term.expired(); !slices.Equal(again, ids[300:601]) {
		t.Fatalf("after forgetting 300 the next sweep = %d sessions, want the other 301 again", len(again))
	}
	for _, id := range ids[:601] {
		if term.extend(id, 10*time.Second) {
			t.Fatalf("keepalive accepted for %s, handed to expire or forgotten", id)
		}
	}
	if !term.extend(ids[601], 10*time.Second) {
		t.Fatalf("keepalive refused for %s, not due yet", ids[601])
	}
}

// The table catches up with the state when they differ: a session the
// state has and the table does not (its create's answer was lost) is
// adopted with a full TTL, and one the table has and the state not (its
// destroy's answer was lost) is dropped without an expiry.
func TestLeaderTerm_ReconcileAdoptsAndDrops(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	term, f := newTestTerm(clock)
	mustApply(t, f, 1, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "kept", TTL: 10 * time.Second})
	mustApply(t, f, 2, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "destroyed", TTL: 5 * time.Second})
	term.track("kept", 10*time.Second)
	term.track("destroyed", 5*time.Second)
	mustApply(t, f, 3, fsm.Command{Op: fsm.OpDestroySession, Now: clock.Now(), Session: "destroyed"})
	clock.advance(time.Second)
	mustApply(t, f, 4, fsm.Command{Op: fsm.OpCreateSession, Now: clock.Now(), Session: "orphan", TTL: 3 * time.Second})
	// Two tracked, two in the state: the counts agree, nothing to do yet.
	if got := term.expired(); len(got) != 0 || tracks(term, "orphan") {
		t.Fatalf("sweep = %v, orphan tracked %v", got, tracks(term, "orphan"))
	}
	// At its deadline the destroyed session is found gone and dropped,
	// not expired; then the counts differ, and the orphan is adopted.
	clock.advance(4 * time.Second)
	if got := term.expired(); len(got) != 0 || tracks(term, "destroyed") || !tracks(term, "orphan") {
		t.Fatalf("sweep at 5s = %v; destroyed tracked %v, orphan %v", got, tracks(term, "destroyed"), tracks(term, "orphan"))
	}
	clock.advance(3*time.Second - time.Millisecond)
	if got := term.expired(); len(got) != 0 {
		t.Fatalf("orphan expired %v before a full TTL from its adoption", got)
	}
	clock.advance(time.Millisecond)
	if got := term.expired(); !slices.Equal(got, []string{"orphan"}) {
		t.Fatalf("sweep a TTL after the adoption = %v, want [orphan]", got)
	}
	// A session the state dropped while the table kept it is dropped at
	// the next reconciliation even before its deadline.
	term.track("ghost", time.Hour)
	clock.advance(reconcileEvery)
	term.expired()
	if tracks(term, "ghost") || !tracks(term, "kept") {
		t.Fatalf("after reconciling: ghost tracked %v, kept %v", tracks(term, "ghost"), tracks(term, "kept"))
	}
}

// gatedEngine commits like applyEngine, records the op of every entry, and
// holds expire-sessions entries while its gate is closed.
type gatedEngine struct {
	*applyEngine
	gate chan struct{} // closed: entries pass

	mu  sync.Mutex
	ops []fsm.Command
}

func (e *gatedEngine) apply(data []byte, timeout time.Duration) (any, error) {
	c, err := fsm.Decode(data)
	if err == nil && c.Op == fsm.OpExpireSessions {
		<-e.gate
	}
	e.mu.Lock()
	e.ops = append(e.ops, c)
	e.mu.Unlock()
	return e.applyEngine.apply(data, timeout)
}

func (e *gatedEngine) commands(op fsm.Op) []fsm.Command {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []fsm.Command
	for _, c := range e.ops {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// syncBuffer is a buffer that a logger and a test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// expiringNode is a node that leads on its own on a manual clock and runs
// the expiry loop of a real leader term, over a gatedEngine (its gate
// closed unless gated), logging at info level to logs.
type expiringNode struct {
	n     *Node
	clock *manualClock
	eng   *gatedEngine
	term  *leaderTerm
	logs  *syncBuffer
}

func newExpiringNode(t *testing.T, gated bool) *expiringNode {
	f := fsm.New()
	clock := &manualClock{now: time.Unix(1000, 0)}
	eng := &gatedEngine{applyEngine: &applyEngine{f: f}, gate: make(chan struct{})}
	if !gated {
		close(eng.gate)
	}
	logs := &syncBuffer{}
	n := &Node{
		cfg: validConfig(), clock: clock, fsm: f, eng: eng,
		log: slog.New(slog.NewTextHandler(logs, nil)), stop: make(chan struct{}),
	}
	term := newLeaderTerm(n, 1)
	term.ready = true
	term.leaseUntil = clock.Now().Add(1000 * time.Hour)
	n.term = term
	term.wg.Add(1)
	go term.expiryLoop()
	t.Cleanup(func() { term.cancel(); term.wg.Wait() })
	return &expiringNode{n: n, clock: clock, eng: eng, term: term, logs: logs}
}

func (en *expiringNode) mustSession(t *testing.T, ttl time.Duration) string {
	t.Helper()
	zero := api.Duration(0)
	s, err := en.n.CreateSession(context.Background(), api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &zero})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// Sessions that fall due together are ended by one expire-sessions entry
// per fsm.MaxSessionsPerEntry of them, logged in one line per entry, with
// their locks handed over as a single expiry would.
func TestExpiry_DueTogetherCommittedTogether(t *testing.T) {
	en := newExpiringNode(t, false)
	const n = 2*fsm.MaxSessionsPerEntry + 500
	ids := make([]string, n)
	for i := range ids {
		ids[i] = en.mustSession(t, 10*time.Second)
	}
	ctx := context.Background()
	if _, err := en.n.Acquire(ctx, "x", api.AcquireRequest{Session: ids[0]}); err != nil {
		t.Fatal(err)
	}
	heir := en.mustSession(t, time.Hour)
	if res, err := en.n.propose(ctx, fsm.Command{Op: fsm.OpAcquire, Session: heir, Name: "x", Wait: time.Hour}); err != nil || res.Err != nil || res.Granted {
		t.Fatalf("the heir's queued acquire: %+v %v", res, err)
	}
	en.clock.advance(10 * time.Second)
	waitFor(t, 30*time.Second, "every due session expired", func() bool { return en.n.fsm.SessionCount() == 1 })
	entries := en.eng.commands(fsm.OpExpireSessions)
	var sizes []int
	for _, c := range entries {
		sizes = append(sizes, len(c.Sessions))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{500, fsm.MaxSessionsPerEntry, fsm.MaxSessionsPerEntry}) || len(en.eng.commands(fsm.OpExpireSession)) != 0 {
		t.Fatalf("expire-sessions entries of %v sessions (and %d expire-session), want 1000, 1000 and 500 in three", sizes, len(en.eng.commands(fsm.OpExpireSession)))
	}
	if got := en.n.fsm.Lock("x").Holders; len(got) != 1 || got[0].Session != heir {
		t.Fatalf("x after its holder expired: %+v, want the heir", got)
	}
	// Each entry's line is written once its proposal returns.
	lines := func() int { return strings.Count(en.logs.String(), "msg=\"sessions expired\"") }
	waitFor(t, 10*time.Second, "a line per entry", func() bool { return lines() >= 3 })
	if lines() != 3 {
		t.Fatalf("%d info lines for three entries:\n%s", lines(), en.logs.String())
	}
}

// While a session's expiry is on its way to commit, a keepalive for it is
// refused as for an expired session, and keepalives for other sessions
// are answered as usual.
func TestExpiry_KeepalivesWhileAnExpiryCommits(t *testing.T) {
	en := newExpiringNode(t, true)
	gone := en.mustSession(t, 5*time.Second)
	live := en.mustSession(t, 5*time.Second)
	en.clock.advance(4 * time.Second)
	ctx := context.Background()
	if _, err := en.n.KeepAlive(ctx, live); err != nil {
		t.Fatal(err)
	}
	en.clock.advance(time.Second)
	waitFor(t, 10*time.Second, "the expiry on its way", func() bool { return len(handed(en.term)) == 1 })
	if _, err := en.n.KeepAlive(ctx, gone); api.CodeOf(err) != api.CodeSessionExpired {
		t.Fatalf("keepalive of the session being expired = %v, want session_expired", err)
	}
	for range 3 {
		if _, err := en.n.KeepAlive(ctx, live); err != nil {
			t.Fatalf("keepalive of a live session while another's expiry commits: %v", err)
		}
	}
	close(en.eng.gate)
	waitFor(t, 10*time.Second, "the expiry committed", func() bool { _, ok := en.n.fsm.Session(gone); return !ok })
	if _, err := en.n.KeepAlive(ctx, gone); api.CodeOf(err) != api.CodeSessionExpired {
		t.Fatalf("keepalive after the expiry = %v, want session_expired", err)
	}
	if _, ok := en.n.fsm.Session(live); !ok {
		t.Fatal("the live session expired")
	}
}

func handed(term *leaderTerm) []string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.deadlines.handedIDs(nil)
}

// One request renews several sessions as one keepalive each would: the
// live ones live a full TTL from the renewal, and the ids of sessions that
// do not exist, or whose expiry is on its way, come back as expired
// without failing the others.
func TestKeepAliveMany_RenewsEachAsAKeepAliveWould(t *testing.T) {
	en := newExpiringNode(t, true)
	a := en.mustSession(t, 5*time.Second)
	b := en.mustSession(t, 5*time.Second)
	gone := en.mustSession(t, 5*time.Second)
	ctx := context.Background()
	en.clock.advance(4 * time.Second)
	res, err := en.n.KeepAliveMany(ctx, []string{a, "no-such-session", b})
	if err != nil {
		t.Fatal(err)
	}
	want := api.KeepAliveManyResponse{
		Renewed: []api.KeepAliveResponse{{ID: a, TTL: api.Duration(5 * time.Second)}, {ID: b, TTL: api.Duration(5 * time.Second)}},
		Expired: []string{"no-such-session"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("KeepAliveMany = %+v, want %+v", res, want)
	}
	// At 5 s gone falls due (its expiry is held on its way); a and b,
	// renewed at 4 s, live until 9 s.
	en.clock.advance(time.Second)
	waitFor(t, 10*time.Second, "gone's expiry on its way", func() bool { return slices.Equal(handed(en.term), []string{gone}) })
	res, err = en.n.KeepAliveMany(ctx, []string{gone, a})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renewed) != 1 || res.Renewed[0].ID != a || !slices.Equal(res.Expired, []string{gone}) {
		t.Fatalf("KeepAliveMany while gone's expiry commits = %+v, want a renewed and gone expired", res)
	}
	close(en.eng.gate)
	waitFor(t, 10*time.Second, "gone's expiry committed", func() bool { _, ok := en.n.fsm.Session(gone); return !ok })
	// At 9.5 s b (renewed at 4 s) is due and a (renewed at 5 s) is not.
	en.clock.advance(4500 * time.Millisecond)
	waitFor(t, 10*time.Second, "b's expiry", func() bool { _, ok := en.n.fsm.Session(b); return !ok })
	if _, ok := en.n.fsm.Session(a); !ok {
		t.Fatal("a expired, though renewed at 5 s with a TTL of 5 s")
	}
	if got := en.n.count.keepalives.Load(); got != 3 {
		t.Fatalf("keepalives counted: %d, want 3 (a twice, b once)", got)
	}
}

// A node that does not lead, or whose master lease ran out, renews none.
func TestKeepAliveMany_OnlyUnderTheLease(t *testing.T) {
	en := newExpiringNode(t, false)
	a := en.mustSession(t, 5*time.Second)
	en.term.mu.Lock()
	en.term.leaseUntil = en.clock.Now()
	en.term.mu.Unlock()
	if _, err := en.n.KeepAliveMany(context.Background(), []string{a}); api.CodeOf(err) != api.CodeNoLeader {
		t.Fatalf("KeepAliveMany without a lease = %v, want no_leader", err)
	}
}
