package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// The fuzz targets of the log and snapshot decoders. `go test` runs each on
// its seeds (the f.Add calls and testdata/fuzz/<target>); docs/harness.md,
// "Fuzzing", says how to fuzz one.

// fuzzMinimizeTime is how long the fuzzer minimizes an input here unless
// -fuzzminimizetime says otherwise; see TestMain.
const fuzzMinimizeTime = "5s"

// TestMain sets the fuzzer's minimize time to fuzzMinimizeTime when the
// command line does not set it. The fuzzer minimizes every input that
// finds new coverage, by running it again for each byte and each run of
// bytes it tries to drop: for the inputs of FuzzApply and FuzzRestore,
// logs and snapshots of a few KiB, that takes the whole default of 60 s,
// during which nothing is fuzzed, and a 3-minute run of FuzzApply spent
// all but seconds minimizing.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", fuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// seedLog is a short history that leaves something of every kind in the
// state: sessions with and without request-number windows, an exclusive
// and a shared lock, a queue, a lock-delay, an election with a queued
// candidate, request numbers and a floor, a member; then a timer that runs
// out and an expiry of several sessions; then keys: ephemeral, sequential,
// under a guard, deleted by prefix; then a token with a limit, a key it
// owns, and writes refused past its limit and by a token that does not
// exist.
func seedLog() []Command {
	seqWindow := func(c Command, w int) Command { c.SeqWindow = w; return c }
	at := func(c Command, d time.Duration) Command { c.Now = t0.Add(d); return c }
	return []Command{
		create("a", 0), // 1
		create("b", 5*time.Second),
		seqWindow(create("c", 0), 1),
		create("d", 30*time.Second),
		acquire("a", "x", "", 0), // 5
		acquire("b", "x", Exclusive, time.Minute),
		acquire("a", "sh", Shared, 0),
		seqd(acquire("c", "sh", Shared, 0), 1),
		acquire("d", "dl", Exclusive, 0),
		expire("d"), // 10: dl in a lock-delay
		campaign("c", "e", "v1", 0),
		seqd(campaign("b", "e", "v2", time.Minute), 1),
		seqd(proclaim("c", "e", "v3"), 2),
		seqd(acquire("c", "p", "", 0), 3),
		seqd(release("c", "p"), 4), // 15
		seqd(acquire("c", "q", "", 0), 5),
		seqd(release("c", "q"), 6), // c's window of 1 folds p's number into its floor
		{Op: OpSetMember, Member: &Member{ID: "n1", Peer: "127.0.0.1:7401", HTTP: "http://127.0.0.1:7400"}},
		at(due(TimerRef{Name: "dl", Armed: 10}), time.Minute),
		at(expireAll("b", "zz"), time.Minute), // 20
		ephemeral("a", "e/1", "x"),
		seqd(withSession(sequential("q/"), "c"), 7),
		guardedTxn(Guard{Lock: "x", Token: 5}, Compare{Key: []byte("e/1"), Target: TargetVersion, Op: Equal, Number: 1}),
		txn(Txn{Success: []TxnOp{prefixOp(TxnDelete, "q/"), prefixOp(TxnGet, "e/")}}),
		puts("k", "v"), // 25
		limitedToken("t", 1, 0),
		by("t", puts("o", "1")),
		by("t", puts("p", "")),    // past t's one key: refused
		by("gone", puts("z", "")), // 29: no such token: refused
	}
}

func withSession(c Command, session string) Command { c.Session = session; return c }

// guardedTxn is a transaction under guard g that puts a key if cmp holds
// and deletes it if not.
func guardedTxn(g Guard, cmp Compare) Command {
	return txn(Txn{Guard: &g, Compare: []Compare{cmp}, Success: []TxnOp{Put([]byte("g"), []byte("1"))}, Failure: []TxnOp{Delete([]byte("g"))}})
}

// encodeAll returns the log entries of cs, version-2.
func encodeAll(t testing.TB, cs []Command) [][]byte {
	t.Helper()
	out := make([][]byte, 0, len(cs))
	for _, c := range cs {
		if c.Now.IsZero() {
			c.Now = t0
		}
		b, err := Encode(c)
		if err != nil {
			t.Fatalf("encode %v: %v", c.Op, err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecode: Decode never panics; what it refuses wraps ErrBadCommand;
// what it accepts encodes again, in the version it was read in, to bytes
// that decode to the same command and encode to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, b := range encodeAll(f, seedLog()) {
		f.Add(b)
	}
	v1, err := encodeVersion(Command{Op: OpTick, Now: t0}, version1)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1)
	f.Add([]byte{})
	f.Add([]byte{Version})
	f.Add([]byte{Version, byte(OpAcquire), '{', '}'})
	f.Add([]byte{Version, byte(OpExpireSessions + 1), '{', '}'})
	f.Add([]byte{version1, byte(OpTimersDue), '{', '}'})
	f.Add(append([]byte{Version, byte(OpCreateSession)}, `{"session":"a","ttl":"1s"}`...))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		if c.Op != Op(data[1]) || c.legacy != (data[0] == version1) {
			t.Fatalf("decoded op %v legacy %v from version %d op %d", c.Op, c.legacy, data[0], data[1])
		}
		enc, err := encodeVersion(c, data[0])
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", enc, err)
		}
		if !reflect.DeepEqual(canonical(c), canonical(again)) {
			t.Fatalf("round trip changed the command:\n%+v\n%+v", c, again)
		}
		if enc2, err := encodeVersion(again, data[0]); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("second encoding differs (%v):\n%q\n%q", err, enc, enc2)
		}
	})
}

// canonical returns c as JSON sees it: Now in UTC (JSON keeps the instant
// and the offset, not the *time.Location), empty lists as none (the
// encoding omits both alike).
func canonical(c Command) Command {
	c.Now = c.Now.UTC()
	if len(c.Timers) == 0 {
		c.Timers = nil
	}
	if len(c.Sessions) == 0 {
		c.Sessions = nil
	}
	return c
}

// Bounds of a FuzzApply and a FuzzRestore input: the entries one applies,
// and the bytes of either (larger inputs are skipped). They keep an
// execution short, and so the minimizing of an input that finds new
// coverage, which runs it again for every byte it tries to drop.
const (
	fuzzMaxEntries = 32
	fuzzMaxInput   = 4 << 10
)

// entrySep separates the entries of a FuzzApply input. No encoded command
// contains it (a version byte, an op byte below 0xff, then UTF-8 JSON),
// and a separator, unlike a length prefix, keeps its entries apart
// whatever bytes a mutation inserts or deletes.
const entrySep = 0xff

func joinEntries(entries [][]byte) []byte {
	return bytes.Join(entries, []byte{entrySep})
}

// FuzzApply applies the entries of its input (see entrySep) to a new FSM
// at indexes 1, 2, 3... After each: Apply did not panic and moved the
// applied index to the entry's; an undecodable entry is ErrBadCommand; a
// refusal that Refusal told in advance is what Apply answered; a refusal
// changed nothing but the applied index (and the request numbers, see
// sameRefused); a grant made the session a holder with the token
// answered; the state keeps the invariants of checkInvariants; and its
// snapshot restores to a state whose snapshot is the same bytes.
func FuzzApply(f *testing.F) {
	log := encodeAll(f, seedLog())
	f.Add(joinEntries(log))
	f.Add(joinEntries(log[:10]))
	f.Add(joinEntries(append(log[:5:5], []byte{Version, byte(OpAcquire), '{', '}'}, log[5])))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		entries := bytes.SplitN(data, []byte{entrySep}, fuzzMaxEntries+1)
		entries = entries[:min(len(entries), fuzzMaxEntries)]
		fsm := New()
		before := mustSnapshot(t, fsm)
		for i, e := range entries {
			index := uint64(i + 1)
			c, decodeErr := Decode(e)
			var told error
			if decodeErr == nil && !c.legacy {
				told = fsm.Refusal(c)
			}
			res := fsm.Apply(index, e)
			if res.Index != index || fsm.AppliedIndex() != index {
				t.Fatalf("entry %d: result index %d, applied index %d", index, res.Index, fsm.AppliedIndex())
			}
			after := mustSnapshot(t, fsm)
			switch {
			case decodeErr != nil && !errors.Is(res.Err, ErrBadCommand):
				t.Fatalf("entry %d does not decode (%v), yet applied as %+v", index, decodeErr, res)
			case told != nil && (res.Err == nil || res.Err.Error() != told.Error() || res.Granted):
				t.Fatalf("entry %d %v: Refusal said %v, Apply answered %+v", index, c.Op, told, res)
			case res.Err != nil && !sameRefused(t, before, after, c.Seq):
				t.Fatalf("entry %d %v: refused (%v), yet the state changed:\n%s\n%s", index, c.Op, res.Err, before, after)
			case res.Granted:
				checkGranted(t, fsm, index, c, res)
			}
			checkInvariants(t, fsm)
			// A refusal's state is the one before it, checked already.
			if res.Err == nil {
				if again := mustSnapshot(t, mustRestore(t, after)); !bytes.Equal(after, again) {
					t.Fatalf("entry %d: the snapshot does not restore to itself:\n%s\n%s", index, after, again)
				}
			}
			before = after
		}
	})
}

// sameRefused reports whether the snapshots before and after a refused
// command hold the same state but for the applied index, and, when the
// command carried a request number (seq), the request-number tables: a
// refused acquire still records a new number, so that a late copy of it
// is not granted later (see Refusal).
func sameRefused(t *testing.T, before, after []byte, seq uint64) bool {
	t.Helper()
	if bytes.Equal(withoutApplied(t, before), withoutApplied(t, after)) {
		return true
	}
	if seq == 0 {
		return false
	}
	var a, b snapshotFile
	if err := json.Unmarshal(before, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &b); err != nil {
		t.Fatal(err)
	}
	a.AppliedIndex, a.Seqs, a.SeqFloors = 0, nil, nil
	b.AppliedIndex, b.Seqs, b.SeqFloors = 0, nil, nil
	return reflect.DeepEqual(a, b)
}

// withoutApplied returns snap without its applied index, which leads it.
func withoutApplied(t *testing.T, snap []byte) []byte {
	t.Helper()
	prefix := []byte(`{"version":` + strconv.Itoa(snapshotVersion) + `,"applied_index":`)
	rest, ok := bytes.CutPrefix(snap, prefix)
	if !ok {
		t.Fatalf("snapshot does not start with %s: %s", prefix, snap)
	}
	return rest[bytes.IndexByte(rest, ','):]
}

// checkGranted fails unless res, granted to c at index, names a token the
// session holds the object with now.
func checkGranted(t *testing.T, f *FSM, index uint64, c Command, res Result) {
	t.Helper()
	var l Lock
	switch c.Op {
	case OpAcquire:
		l = f.Lock(c.Name)
	case OpCampaign:
		l = f.Election(c.Name)
	default:
		t.Fatalf("entry %d: %v answered granted", index, c.Op)
	}
	if i := l.holder(c.Session); res.Token == 0 || res.Token > index || i < 0 || l.Holders[i].Token != res.Token {
		t.Fatalf("entry %d %v: granted token %d, but %q holds %+v", index, c.Op, res.Token, c.Name, l)
	}
}

// FuzzRestore: Restore never panics; what it refuses wraps ErrBadSnapshot
// and leaves the state as it was; a state it accepts keeps the invariants
// of checkInvariants (it could have been built by entries, as Restore
// promises), snapshots to bytes that restore to a state with the same
// snapshot, and takes the entries that end every timer and every session
// without panicking, after which the round trip still holds.
func FuzzRestore(f *testing.F) {
	h := newHarness(f)
	log := seedLog()
	for i, c := range log {
		// The log's last two entries are refused.
		if res := h.apply(c); res.Err != nil && i < len(log)-2 {
			f.Fatalf("entry %d: %v", i+1, res.Err)
		}
		if i%5 == 4 {
			f.Add(mustSnapshot(f, h.f))
		}
	}
	for _, path := range []string{"testdata/version2-snapshot.json"} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(readVersion1Log(f).Snapshot))
	// Times at the edges of the years JSON encodes (0 to 9999), in zones
	// other than UTC, which Restore converts to.
	f.Add([]byte(`{"version":3,"applied_index":4,"locks_index":4,"elections_index":0,` +
		`"sessions":[{"id":"a","ttl":1,"lock_delay":0,"create_index":1},{"id":"b","ttl":1,"lock_delay":0,"create_index":2}],` +
		`"locks":[{"name":"x","mode":"exclusive","holders":[{"session":"a","token":3,"acquired_at":"9999-12-31T23:59:59+01:00"}],` +
		`"waiters":[{"session":"b","mode":"exclusive","deadline":"0000-01-01T00:00:00-01:00","wait":1,"since":4}],"modify_index":4}],` +
		`"elections":[],"members":[]}`))
	f.Add([]byte{})
	f.Add([]byte("null"))
	f.Add([]byte(`{"version":3}`))
	f.Add([]byte(`{"version":3,"applied_index":1}{}`))
	base := mustSnapshot(f, h.f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		fsm := mustRestore(t, base)
		if err := fsm.Restore(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
			}
			if after := mustSnapshot(t, fsm); !bytes.Equal(base, after) {
				t.Fatalf("refused restore (%v) changed the state:\n%s", err, after)
			}
			return
		}
		checkInvariants(t, fsm)
		checkRoundTrip(t, fsm)
		applied := fsm.AppliedIndex()
		var refs []TimerRef
		for _, tm := range fsm.Timers() {
			refs = append(refs, tm.TimerRef)
		}
		var ids []string
		for _, s := range fsm.Sessions() {
			ids = append(ids, s.ID)
		}
		fsm.ApplyCommand(applied+1, Command{Op: OpTimersDue, Now: t0, Timers: refs})
		fsm.ApplyCommand(applied+2, Command{Op: OpExpireSessions, Now: t0, Sessions: ids})
		checkRoundTrip(t, fsm)
	})
}

// checkRoundTrip fails unless f's snapshot restores to a state with the
// same snapshot.
func checkRoundTrip(t *testing.T, f *FSM) {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("a restored state does not snapshot: %v", err)
	}
	g := New()
	if err := g.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("the snapshot of a restored state does not restore: %v\n%s", err, snap)
	}
	if again := mustSnapshot(t, g); !bytes.Equal(snap, again) {
		t.Fatalf("snapshot round trip differs:\n%s\n%s", snap, again)
	}
}
