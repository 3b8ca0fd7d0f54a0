package system

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// hold is one acknowledged acquire of the membership workload: the lock
// was held by worker from the moment Lock returned (acked) to the moment
// the worker began to release it (released).
type hold struct {
	lock            string
	worker          int
	token           uint64
	acked, released time.Time
	lost            bool // the session or lock was lost before the release began
}

// memberWorkload runs workers that each take and release two locks in
// turn, through the client library with every node as an endpoint, and
// record every acknowledged acquire.
type memberWorkload struct {
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	holds    []hold
	errs     []string
	// final[w] is the lock worker w holds at the end, for the visibility
	// check; its session stays open.
	final    map[int]hold
	sessions map[int]*client.Session
}

// startMemberWorkload starts workers through endpoints; they stop at
// halt, or when the test ends.
func startMemberWorkload(t *testing.T, endpoints []string, workers int) *memberWorkload {
	w := &memberWorkload{stop: make(chan struct{}), final: map[int]hold{}, sessions: map[int]*client.Session{}}
	for i := range workers {
		w.wg.Add(1)
		go w.run(t, endpoints, i)
	}
	t.Cleanup(w.halt)
	return w
}

// check halts the workload and checks what it saw: enough acknowledged
// acquires, tokens that grow per lock, no two holds that overlap, and
// the locks held at the end visible through endpoints with their tokens
// after what (the changes the test made).
func (w *memberWorkload) check(ctx context.Context, t *testing.T, endpoints []string, what string) {
	t.Helper()
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Logf("workload: %s", e)
	}
	if len(w.holds) < 20 {
		t.Fatalf("only %d acknowledged acquires: the workload did not run", len(w.holds))
	}
	checkHolds(t, w.holds)
	w.checkFinal(ctx, t, endpoints, what)
}

// halt stops the workers and waits for them; it may be called again.
func (w *memberWorkload) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

func (w *memberWorkload) note(format string, args ...any) {
	w.mu.Lock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

func (w *memberWorkload) run(t *testing.T, endpoints []string, id int) {
	defer w.wg.Done()
	c, err := client.NewWithConfig(client.Config{Endpoints: endpoints})
	if err != nil {
		w.note("worker %d: %v", id, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	s, err := client.NewSession(ctx, c, client.WithTTL(15*time.Second), client.WithLockDelay(0))
	cancel()
	if err != nil {
		w.note("worker %d: session: %v", id, err)
		return
	}
	deadline := time.Now().Add(50 * time.Second) // bounded even if stop never comes
	for i := 0; time.Now().Before(deadline); i++ {
		select {
		case <-w.stop:
			w.finish(s, id)
			return
		default:
		}
		name := fmt.Sprintf("members/%d", i%2)
		m := client.NewMutex(s, name)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		err := m.Lock(ctx)
		cancel()
		if err != nil {
			w.note("worker %d: lock %s: %v", id, name, err)
			if !s.Alive() {
				return
			}
			continue
		}
		h := hold{lock: name, worker: id, token: m.Token(), acked: time.Now()}
		time.Sleep(5 * time.Millisecond)
		select {
		case <-m.Lost():
			h.lost = true
		default:
		}
		h.released = time.Now()
		w.mu.Lock()
		w.holds = append(w.holds, h)
		w.mu.Unlock()
		ctx, cancel = context.WithTimeout(context.Background(), 8*time.Second)
		if err := m.Unlock(ctx); err != nil {
			w.note("worker %d: unlock %s token %d: %v", id, name, h.token, err)
		}
		cancel()
	}
	w.note("worker %d: ran out of time before the stop", id)
}

// finish takes the worker's final lock and keeps it, session and all.
func (w *memberWorkload) finish(s *client.Session, id int) {
	name := fmt.Sprintf("members/final-%d", id)
	m := client.NewMutex(s, name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		w.note("worker %d: final lock: %v", id, err)
		return
	}
	w.mu.Lock()
	w.final[id] = hold{lock: name, worker: id, token: m.Token(), acked: time.Now()}
	w.sessions[id] = s
	w.mu.Unlock()
}

// checkHolds checks the records: per lock, tokens strictly increase in
// the order the holds happened, and no hold began before the one before
// it (by token) had begun its release.
func checkHolds(t *testing.T, holds []hold) {
	t.Helper()
	byLock := map[string][]hold{}
	for _, h := range holds {
		if h.lost {
			t.Errorf("worker %d lost %s (token %d) while holding it: sessions must survive membership changes", h.worker, h.lock, h.token)
			continue
		}
		byLock[h.lock] = append(byLock[h.lock], h)
	}
	for name, hs := range byLock {
		sort.Slice(hs, func(i, j int) bool { return hs[i].token < hs[j].token })
		for i := 1; i < len(hs); i++ {
			a, b := hs[i-1], hs[i]
			if b.token == a.token {
				t.Errorf("%s: token %d acknowledged twice (workers %d and %d)", name, a.token, a.worker, b.worker)
			}
			if b.acked.Before(a.released) {
				t.Errorf("%s: worker %d held it with token %d from %s, before worker %d (token %d) let go at %s",
					name, b.worker, b.token, b.acked.Format("15:04:05.000"), a.worker, a.token, a.released.Format("15:04:05.000"))
			}
		}
	}
}

// lockdCLI runs the lockd binary with LOCKD_ADDR set to addrs and returns
// its standard output, standard error and exit code.
func lockdCLI(t *testing.T, addrs []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(mustBuild(t), args...)
	cmd.Env = append(os.Environ(), "LOCKD_ADDR="+strings.Join(addrs, ","))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCodeOf(err)
}

func mustCLI(t *testing.T, addrs []string, args ...string) string {
	t.Helper()
	out, errOut, code := lockdCLI(t, addrs, args...)
	if code != 0 {
		t.Fatalf("lockd %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// cliMembers lists the members through the CLI's JSON output.
func cliMembers(t *testing.T, addrs []string) []api.Member {
	t.Helper()
	out, _, code := lockdCLI(t, addrs, "members", "--json")
	var ms []api.Member
	if code != 0 || json.Unmarshal([]byte(out), &ms) != nil {
		return nil
	}
	return ms
}

func voterIDs(ms []api.Member) []string {
	var ids []string
	for _, m := range ms {
		if m.Voter {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestMembers_GrowTransferShrinkUnderLoad grows a 3-node cluster to 5
// with the CLI (n4 joins by itself with --join; n5 is added with "lockd
// members add" and then started), hands leadership to n4 with "lockd
// leader-transfer", and shrinks back to 3 with "lockd members remove",
// removing the leader and an original follower, all while workers take
// and release locks. Then: every acknowledged acquire's token increases
// per lock and no two holds overlap; the lease logs show no two nodes
// that could serve at once; every lock held at the end is visible with
// its token; the removed nodes exited with status 0 and said why, and one
// started again on its data (with --join) answers 410 removed and stays
// out.
func TestMembers_GrowTransferShrinkUnderLoad(t *testing.T) {
	bin := mustBuild(t)
	start := time.Now()
	c, _ := startCluster(t, proccluster.Config{Binary: bin, Nodes: 5, Voters: 3, Dir: t.TempDir()})
	ctx := context.Background()
	all := c.Endpoints()
	n1, n2, n4, n5 := c.Nodes[0], c.Nodes[1], c.Nodes[3], c.Nodes[4]
	w := startMemberWorkload(t, all, 4)
	time.Sleep(time.Second)

	// Grow: n4 joins by itself; n5 is added first, then started.
	if err := n4.StartJoin(bin, n1.HTTP); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, all, "members", "add", n5.ID, n5.Peer, "--http", n5.HTTP)
	if err := n5.StartJoin(bin, n1.HTTP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "5 voters, each with its HTTP address", func() bool {
		ms := cliMembers(t, all)
		for _, m := range ms {
			if m.HTTP == "" {
				return false
			}
		}
		return slices.Equal(voterIDs(ms), []string{"n1", "n2", "n3", "n4", "n5"})
	})
	for _, args := range [][]string{{"members", "remove", "n9"}, {"leader-transfer", "--to", "n9"}} {
		if out, errOut, code := lockdCLI(t, all, args...); code != 1 || !strings.Contains(errOut, `no member "n9"`) {
			t.Errorf("lockd %s: exit %d, %q %q; want 1 and no member \"n9\"", strings.Join(args, " "), code, out, errOut)
		}
	}
	table := mustCLI(t, all, "members")
	if !strings.Contains(table, "leader") || strings.Count(table, " voter ") != 4 {
		t.Fatalf("lockd members table: want one leader and four voters:\n%s", table)
	}
	time.Sleep(time.Second)

	// Hand leadership to the node that joined.
	out := mustCLI(t, all, "leader-transfer", "--to", n4.ID)
	if !strings.Contains(out, "leader now: "+n4.ID) {
		t.Fatalf("leader-transfer printed %q, want the new leader %s", out, n4.ID)
	}
	waitFor(t, 10*time.Second, "n4 to serve as leader", func() bool {
		st, err := n4.Status(ctx)
		return err == nil && st.State == "Leader" && st.MasterLeaseRemaining != nil && st.MasterLeaseRemaining.D() > 0
	})
	time.Sleep(time.Second)

	// Shrink: remove the leader (n4), then an original follower (n2).
	for _, v := range []*proccluster.Node{n4, n2} {
		mustCLI(t, all, "members", "remove", v.ID)
		waitFor(t, 45*time.Second, v.ID+" to exit by itself", func() bool {
			_, exited := v.Exited()
			return exited
		})
		if code, _ := v.Exited(); code != 0 {
			t.Errorf("removed %s exited with status %d, want 0", v.ID, code)
		}
		b, _ := os.ReadFile(v.LogPath)
		if !strings.Contains(string(b), "this node was removed from the cluster") {
			t.Errorf("removed %s did not say why it stopped; its log ends:\n%s", v.ID, tail(b, 10))
		}
		if _, err := c.WaitLeader(ctx, 15*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "3 voters n1, n3, n5", func() bool {
		return slices.Equal(voterIDs(cliMembers(t, all)), []string{"n1", "n3", "n5"})
	})
	time.Sleep(time.Second)
	w.check(ctx, t, all, "the changes")

	// No two nodes could serve at once, by every node's lease log.
	var lines []validate.LeaseLine
	skipped := 0
	for _, n := range c.Nodes {
		f, err := os.Open(n.LeaseLogPath)
		if err != nil {
			t.Fatal(err)
		}
		l, sk, err := validate.ParseLeaseLog(f)
		_ = f.Close() // read only
		if err != nil {
			t.Fatal(err)
		}
		lines, skipped = append(lines, l...), skipped+sk
	}
	if v := validate.CheckMasterLease(lines, skipped, false); !v.OK() {
		t.Errorf("master leases: %v", v)
	}

	// A removed node started again on its data, even with --join,
	// answers 410 removed and does not ask to be added back.
	if err := n4.StartJoin(bin, n1.HTTP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the restarted removed node to answer 410 removed", func() bool {
		var e *api.Error
		_, err := n4.Status(ctx)
		return err != nil && errors.As(err, &e) && e.Code == api.CodeRemoved
	})
	time.Sleep(2 * time.Second) // the node would have asked to join by now
	if ids := voterIDs(cliMembers(t, all)); !slices.Equal(ids, []string{"n1", "n3", "n5"}) {
		t.Errorf("after the removed n4 restarted with --join, the voters are %v; want n1 n3 n5", ids)
	}
	t.Logf("%d acknowledged acquires checked; whole test %v", len(w.holds), time.Since(start).Round(time.Millisecond))
}

// checkFinal checks the end of a workload through endpoints: every lock a
// worker was last acknowledged is shown with that worker's session and
// token, and a grant made afterwards gets a token above every acknowledged
// one (after is what happened in between, for the message). It ends the
// workers' sessions.
func (w *memberWorkload) checkFinal(ctx context.Context, t *testing.T, endpoints []string, after string) {
	t.Helper()
	var ls []api.Lock
	out := mustCLI(t, endpoints, "locks", "--json")
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatalf("lockd locks --json: %v\n%s", err, out)
	}
	locks := map[string]api.Lock{}
	for _, l := range ls {
		locks[l.Name] = l
	}
	if len(w.final) == 0 || len(w.final) != len(w.sessions) {
		t.Fatalf("%d workers took their final lock", len(w.final))
	}
	var highest uint64
	for _, h := range w.holds {
		highest = max(highest, h.token)
	}
	for id, f := range w.final {
		l := locks[f.lock]
		if len(l.Holders) != 1 || l.Holders[0].Session != w.sessions[id].ID() || l.Holders[0].Token != f.token {
			t.Errorf("%s: acknowledged to worker %d with token %d, but the cluster shows %+v", f.lock, id, f.token, l.Holders)
		}
		highest = max(highest, f.token)
	}
	cl, _ := client.New(endpoints...)
	s, err := client.NewSession(ctx, cl, client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := client.NewMutex(s, "members/after")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Token() <= highest {
		t.Errorf("a grant after %s got token %d, not above the highest acknowledged %d", after, m.Token(), highest)
	}
	s.Close()
	for _, s := range w.sessions {
		s.Close()
	}
}
