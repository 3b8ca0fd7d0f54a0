package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/internal/backup"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// call sends one JSON request to base and decodes a success into out.
func call(ctx context.Context, base, method, path string, in, out any) (int, api.Error) {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return 0, api.Error{Message: err.Error()}
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, &body)
	if err != nil {
		return 0, api.Error{Message: err.Error()}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, api.Error{Message: err.Error()}
	}
	defer resp.Body.Close()
	var e api.Error
	if resp.StatusCode >= 300 {
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			e.Message = "undecodable error body: " + err.Error()
		}
	} else if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, api.Error{Message: "decode: " + err.Error()}
		}
	}
	return resp.StatusCode, e
}

func mustAPI(t *testing.T, base, method, path string, in, out any) {
	t.Helper()
	if code, e := call(context.Background(), base, method, path, in, out); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("%s %s: %d %+v", method, path, code, e)
	}
}

// runCLI runs "lockd ARGS..." in this process and returns its exit code,
// stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := snapshotCmd(args[2:], &out, &errb) // after "lockd snapshot"
	return code, out.String(), errb.String()
}

// loaded is a cluster with every kind of state a backup must carry.
type loaded struct {
	c        *servertest.Cluster
	sessions map[string]string // by name: id
	stop     func()            // ends the keepalives and the blocked requests
}

const (
	loadTTL   = 3 * time.Second
	loadWait  = time.Minute
	loadDelay = time.Minute
)

// loadCluster creates sessions a..e (TTL loadTTL, kept alive until stop) and x:
// a holds jobs/a with b then c queued behind it, b and c share reports, d
// leads sched with e queued for it, and x, which is left to expire, held
// delayed, now in its lock-delay. The keys are cfg/db, svc/a (owned by a)
// and svc/b (owned by b).
func loadCluster(t *testing.T) *loaded {
	c := servertest.New(t, 3)
	base := c.URL(c.WaitLeader())
	l := &loaded{c: c, sessions: map[string]string{}}
	newSession := func(name string, ttl, delay time.Duration) string {
		var s api.Session
		d := api.Duration(delay)
		mustAPI(t, base, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(ttl), LockDelay: &d, Name: name}, &s)
		l.sessions[name] = s.ID
		return s.ID
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		newSession(n, loadTTL, 2*time.Second)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, n := range []string{"a", "b", "c", "d", "e"} {
				call(ctx, base, "POST", "/v1/sessions/"+l.sessions[n]+"/keepalive", nil, nil)
			}
			select {
			case <-ctx.Done():
			case <-time.After(loadTTL / 6):
			}
		}
	})
	l.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(l.stop)
	s := l.sessions
	mustAPI(t, base, "POST", "/v1/locks/jobs/a/acquire", api.AcquireRequest{Session: s["a"]}, nil)
	mustAPI(t, base, "POST", "/v1/locks/reports/acquire", api.AcquireRequest{Session: s["b"], Mode: "shared"}, nil)
	mustAPI(t, base, "POST", "/v1/locks/reports/acquire", api.AcquireRequest{Session: s["c"], Mode: "shared"}, nil)
	mustAPI(t, base, "POST", "/v1/elections/sched/campaign", api.CampaignRequest{Session: s["d"], Value: "d:1"}, nil)
	fsmOf := func() *fsm.FSM { return c.Nodes[c.WaitLeader()].Node().FSM() }
	queue := func(path string, body any, queued func() int, want int) {
		wg.Go(func() { call(ctx, base, "POST", path, body, nil) }) // blocks until stop; hanging up keeps the place
		servertest.WaitFor(t, 10*time.Second, path+" queued", func() bool { return queued() == want })
	}
	jobs := func() int { return len(fsmOf().Lock("jobs/a").Waiters) }
	queue("/v1/locks/jobs/a/acquire", api.AcquireRequest{Session: s["b"], Wait: api.Duration(loadWait)}, jobs, 1)
	queue("/v1/locks/jobs/a/acquire", api.AcquireRequest{Session: s["c"], Wait: api.Duration(loadWait)}, jobs, 2)
	queue("/v1/elections/sched/campaign", api.CampaignRequest{Session: s["e"], Value: "e:1", Wait: api.Duration(loadWait)},
		func() int { return len(fsmOf().Election("sched").Waiters) }, 1)
	// Keys: one of nobody's, and one each owned by a (kept alive after
	// the restore) and by b (left to expire after it).
	mustAPI(t, base, "PUT", "/v1/kv/cfg/db", api.KVPutRequest{Value: []byte("postgres://db:5432"), Flags: 7}, nil)
	mustAPI(t, base, "PUT", "/v1/kv/svc/a", api.KVPutRequest{Value: []byte("10.0.0.1:80"), Session: s["a"], Ephemeral: true}, nil)
	mustAPI(t, base, "PUT", "/v1/kv/svc/b", api.KVPutRequest{Value: []byte("10.0.0.2:80"), Session: s["b"], Ephemeral: true}, nil)
	x := newSession("x", time.Second, loadDelay)
	mustAPI(t, base, "POST", "/v1/locks/delayed/acquire", api.AcquireRequest{Session: x}, nil)
	servertest.WaitFor(t, 10*time.Second, "x to expire", func() bool {
		d := fsmOf().Lock("delayed")
		return len(d.Holders) == 0 && d.DelayIndex != 0
	})
	return l
}

// withoutTimes returns the objects with the times a restore shows afresh
// (a waiter's deadline, a lock-delay's end) left out.
func withoutTimes(locks []fsm.Lock) []fsm.Lock {
	out := make([]fsm.Lock, len(locks))
	for i, l := range locks {
		l.DelayUntil = time.Time{}
		l.Waiters = append([]fsm.Waiter(nil), l.Waiters...)
		for j := range l.Waiters {
			l.Waiters[j].Deadline = time.Time{}
		}
		out[i] = l
	}
	return out
}

// TestSnapshot_SaveAndRestoreIntoAFreshCluster saves a backup of a loaded
// 3-node cluster with the CLI (through a follower), restores it into a
// fresh 3-node cluster, and checks that the new cluster has every session,
// lock, waiter and election as they were, that the sessions got a full TTL
// from the restore, that lock-delays and waits run afresh, and that the
// tokens it grants are above every token in the backup.
func TestSnapshot_SaveAndRestoreIntoAFreshCluster(t *testing.T) {
	src := loadCluster(t)
	leader := src.c.WaitLeader()
	file := filepath.Join(t.TempDir(), "backup.snap")
	code, out, errOut := runCLI("lockd", "snapshot", "save", file, "--addr", src.c.URL(src.c.Follower(leader)))
	if code != cli.ExitOK || !strings.Contains(out, "saved "+file) {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("lockd", "snapshot", "save", file, "--addr", src.c.URL(leader)); code != cli.ExitError || !strings.Contains(errOut, "--force") {
		t.Fatalf("save over an existing file: exit %d, %s", code, errOut)
	}
	if code, out, errOut := runCLI("lockd", "snapshot", "save", file, "--force", "--addr", src.c.URL(leader)); code != cli.ExitOK {
		t.Fatalf("save --force: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("save left %s.tmp behind: %v", file, err)
	}
	if st, err := os.Stat(file); err != nil {
		t.Fatal(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Fatalf("saved file mode %v; want the owner's only", st.Mode())
	}
	f := src.c.Nodes[leader].Node().FSM()
	wantSessions, wantLocks, wantElections := f.Sessions(), f.Locks(), f.Elections()
	allKeys := func(f *fsm.FSM) []fsm.KV { return f.Range(nil, []byte{0}, nil, 0, false, false).KVs }
	wantKeys, wantKVIndex := allKeys(f), f.KVIndex()
	if len(wantKeys) != 3 {
		t.Fatalf("the source holds %d keys, want 3", len(wantKeys))
	}
	src.stop()
	for i := range src.c.Nodes {
		src.c.Crash(i)
	}

	// inspect counts what the file holds.
	code, out, errOut = runCLI("lockd", "snapshot", "inspect", file, "--json")
	var rep fileReport
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Content == nil {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	highest := uint64(0)
	for _, l := range append(append([]fsm.Lock{}, wantLocks...), wantElections...) {
		for _, h := range l.Holders {
			highest = max(highest, h.Token)
		}
	}
	want := stateCounts{Sessions: 5, Locks: 3, LocksHeld: 2, Elections: 1, ElectionsLed: 1, Waiters: 3, HighestToken: highest,
		LockDelays: 1, AppliedIndex: rep.Header.Index}
	if *rep.Content != want || rep.Header.Index < highest {
		t.Fatalf("inspect: %+v in a file at index %d; want %+v", *rep.Content, rep.Header.Index, want)
	}

	// Every session would have expired by now had its TTL run on from
	// the backup: the source's last keepalive is a TTL ago.
	time.Sleep(loadTTL)
	restoreStart := time.Now()
	dst := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		var ic []string
		for _, p := range cfg.Node.InitialCluster {
			ic = append(ic, p.ID+"="+p.Addr)
		}
		code, out, errOut := runCLI("lockd", "snapshot", "restore", file, "--id", cfg.Node.ID, "--data", cfg.Node.DataDir,
			"--initial-cluster", strings.Join(ic, ","))
		if code != cli.ExitOK || !strings.Contains(out, fmt.Sprintf("index %d", rep.Header.Index)) {
			t.Fatalf("restore %s: exit %d\n%s%s", cfg.Node.ID, code, out, errOut)
		}
	})
	dl := dst.WaitLeader()
	for i, s := range dst.Nodes {
		g := s.Node().FSM()
		if !reflect.DeepEqual(g.Sessions(), wantSessions) {
			t.Fatalf("node %d: sessions\n%+v\nwant\n%+v", i, g.Sessions(), wantSessions)
		}
		if !reflect.DeepEqual(withoutTimes(g.Locks()), withoutTimes(wantLocks)) || !reflect.DeepEqual(withoutTimes(g.Elections()), withoutTimes(wantElections)) {
			t.Fatalf("node %d: locks %+v elections %+v\nwant %+v %+v", i, g.Locks(), g.Elections(), wantLocks, wantElections)
		}
		if got := allKeys(g); !reflect.DeepEqual(got, wantKeys) || g.KVIndex() != wantKVIndex {
			t.Fatalf("node %d: keys %+v at index %d\nwant %+v at %d", i, got, g.KVIndex(), wantKeys, wantKVIndex)
		}
		// The waits and the lock-delay are shown running from the restore.
		for _, l := range append(g.Locks(), g.Elections()...) {
			for _, w := range l.Waiters {
				if w.Deadline.Before(restoreStart.Add(loadWait)) {
					t.Fatalf("node %d: %s: waiter %s shown to end %v, before a full wait from the restore", i, l.Name, w.Session, w.Deadline)
				}
			}
		}
		if d := g.Lock("delayed"); d.DelayUntil.Before(restoreStart.Add(loadDelay)) {
			t.Fatalf("node %d: lock-delay shown to end %v, before a full delay from the restore", i, d.DelayUntil)
		}
	}
	base := dst.URL(dl)
	s := src.sessions
	if code, e := call(context.Background(), base, "POST", "/v1/locks/delayed/acquire", api.AcquireRequest{Session: s["a"]}, nil); e.Code != api.CodeLockDelay {
		t.Fatalf("acquire of the lock in lock-delay: %d %+v", code, e)
	}
	var got api.AcquireResponse
	mustAPI(t, base, "POST", "/v1/locks/new/acquire", api.AcquireRequest{Session: s["a"]}, &got)
	if got.Token <= rep.Header.Index || got.Token <= highest {
		t.Fatalf("first token of the restored cluster %d; the backup is at index %d, its highest token %d", got.Token, rep.Header.Index, highest)
	}

	// The sessions live a full TTL from the restore without a keepalive.
	time.Sleep(time.Until(restoreStart.Add(loadTTL - 300*time.Millisecond)))
	var list api.SessionList
	mustAPI(t, base, "GET", "/v1/sessions", nil, &list)
	if len(list.Sessions) != len(wantSessions) {
		t.Fatalf("%d sessions a TTL after the restore began; want all %d", len(list.Sessions), len(wantSessions))
	}
	// Keepalives by the old ids keep a session; the others expire, and
	// the queue behind a moves up as they go.
	servertest.WaitFor(t, 4*loadTTL, "the sessions not kept alive to expire", func() bool {
		mustAPI(t, base, "POST", "/v1/sessions/"+s["a"]+"/keepalive", nil, nil)
		var list api.SessionList
		mustAPI(t, base, "GET", "/v1/sessions", nil, &list)
		return len(list.Sessions) == 1 && list.Sessions[0].ID == s["a"]
	})
	g := dst.Nodes[dl].Node().FSM()
	if l := g.Lock("jobs/a"); len(l.Holders) != 1 || l.Holders[0].Session != s["a"] || len(l.Waiters) != 0 {
		t.Fatalf("jobs/a after the others expired: %+v", l)
	}
	if r, e := g.Lock("reports"), g.Election("sched"); len(r.Holders)+len(e.Holders)+len(e.Waiters) != 0 {
		t.Fatalf("after the others expired: reports %+v, sched %+v; want both released", r, e)
	}
	// b's key went with b; a's and nobody's stay.
	var keys []string
	for _, kv := range allKeys(g) {
		keys = append(keys, string(kv.Key))
	}
	if !slices.Equal(keys, []string{"cfg/db", "svc/a"}) {
		t.Fatalf("keys after the others expired: %q; want cfg/db and svc/a", keys)
	}
}

func TestSnapshot_RestoreRefusesABadFileOrAUsedDataDir(t *testing.T) {
	state, err := fsm.New().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	st["applied_index"] = 9
	state, _ = json.Marshal(st)
	_, good, err := backup.Encode(backup.Header{Index: 9, Term: 1}, state)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	goodFile := write("good.snap", good)
	used := filepath.Join(dir, "used")
	t.Setenv("LOCKD_PEER", "127.0.0.1:7451") // restore reads the variables serve reads
	if code, out, errOut := runCLI("lockd", "snapshot", "restore", goodFile, "--data", used, "--id", "n5", "--min-index", "50"); code != cli.ExitOK || !strings.Contains(out, "index 50") {
		t.Fatalf("restore of a good file: exit %d\n%s%s", code, out, errOut)
	}
	// Without --initial-cluster the node alone is the new cluster, and the
	// Raft snapshot sits at the floor, in term 1.
	snaps, err := raft.NewFileSnapshotStore(used, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) != 1 {
		t.Fatalf("snapshots %v, %v", metas, err)
	}
	m := metas[0]
	if m.Index != 50 || m.Term != 1 || len(m.Configuration.Servers) != 1 ||
		m.Configuration.Servers[0].ID != "n5" || m.Configuration.Servers[0].Address != "127.0.0.1:7451" {
		t.Fatalf("seeded snapshot %+v", m)
	}
	tests := []struct {
		name string
		args []string
		exit int
		want string
	}{
		{"flipped byte", []string{write("flipped.snap", flipped)}, cli.ExitError, "checksum mismatch"},
		{"truncated", []string{write("short.snap", good[:len(good)-10])}, cli.ExitError, "truncated"},
		{"not a backup", []string{write("x.json", state)}, cli.ExitError, `does not start with "LOCKDSNP"`},
		{"missing", []string{filepath.Join(dir, "none.snap")}, cli.ExitError, "no such file"},
		{"used data dir", []string{goodFile, "--data", used}, cli.ExitError, "already holds Raft state"},
		{"id not a voter", []string{goodFile, "--id", "n4", "--initial-cluster", "n1=127.0.0.1:7401"}, cli.ExitUsage, "not one of --initial-cluster"},
		{"join", []string{goodFile, "--join", "http://127.0.0.1:7400"}, cli.ExitUsage, "--join"},
		{"classic mode", []string{goodFile, "--election", "bully"}, cli.ExitUsage, "Raft mode only"},
		{"no file", nil, cli.ExitUsage, "exactly one FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"lockd", "snapshot", "restore", "--data", data}, tc.args...)
			code, out, errOut := runCLI(args...)
			if code != tc.exit || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit %d saying %q", code, errOut, out, tc.exit, tc.want)
			}
			if has, what, _ := lease.HasState(data); has {
				t.Fatalf("a refused restore left %s behind", what)
			}
		})
	}
	for name, want := range map[string]string{"flipped.snap": "checksum mismatch", "short.snap": "truncated", "x.json": `does not start with "LOCKDSNP"`} {
		if code, _, errOut := runCLI("lockd", "snapshot", "inspect", filepath.Join(dir, name)); code != cli.ExitError || !strings.Contains(errOut, want) {
			t.Fatalf("inspect %s: exit %d, %q; want exit 1 saying %q", name, code, errOut, want)
		}
	}
}

func TestRestoreVoters(t *testing.T) {
	tests := []struct {
		f    serveFlags
		want string
	}{
		{serveFlags{id: "n1", peerAddr: "127.0.0.1:7401"}, "[{n1 127.0.0.1:7401}]"},
		{serveFlags{id: "n1", peerAddr: "0.0.0.0:7401", advertisePeer: "10.0.0.1:7401"}, "[{n1 10.0.0.1:7401}]"},
		{serveFlags{id: "n2", peerAddr: "x", initialCluster: "n1=10.0.0.1:7401,n2=10.0.0.2:7401"}, "[{n1 10.0.0.1:7401} {n2 10.0.0.2:7401}]"},
		{serveFlags{id: "n3", initialCluster: "n1=10.0.0.1:7401,n2=10.0.0.2:7401"}, "error"},
	}
	for _, tc := range tests {
		got, err := restoreVoters(&tc.f)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != tc.want {
			t.Errorf("%+v: %s (%v), want %s", tc.f, s, err, tc.want)
		}
	}
}
