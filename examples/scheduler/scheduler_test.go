package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// testTasks is the size of the job in the acceptance tests: at 50ms a task,
// three seconds of work, plenty to interrupt.
const testTasks = 60

// schedulerRun is a whole scheduler: an in-process 3-node lockd cluster,
// the store and three workers w1..w3 as processes.
type schedulerRun struct {
	t       *testing.T
	lockd   *client.Client
	store   string // the store's URL
	workers map[string]*proc
}

func startRun(t *testing.T, tasks int) *schedulerRun {
	t.Helper()
	c := servertest.New(t, 3)
	lc, err := client.New(c.URLs()...)
	if err != nil {
		t.Fatal(err)
	}
	store := startProc(t, "store", "store", "--listen", "127.0.0.1:0", "--tasks", strconv.Itoa(tasks))
	_, m := store.waitLine(regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)$`), 0, 10*time.Second)
	r := &schedulerRun{t: t, lockd: lc, store: m[1], workers: map[string]*proc{}}
	for _, id := range []string{"w1", "w2", "w3"} {
		r.workers[id] = startProc(t, id, "worker", "--lockd", strings.Join(c.URLs(), ","),
			"--store", r.store, "--id", id, "--work", "50ms", "--ttl", "2s", "--lock-delay", "500ms")
	}
	return r
}

var httpClient = &http.Client{Timeout: 3 * time.Second}

func (r *schedulerRun) get(path string, out any) {
	r.t.Helper()
	resp, err := httpClient.Get(r.store + path)
	if err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
}

func (r *schedulerRun) status() status {
	r.t.Helper()
	var st status
	r.get("/status", &st)
	return st
}

func (r *schedulerRun) results() resultsResponse {
	r.t.Helper()
	var res resultsResponse
	r.get("/results", &res)
	return res
}

func (r *schedulerRun) waitDone(n int, within time.Duration) {
	r.t.Helper()
	servertest.WaitFor(r.t, within, fmt.Sprintf("%d tasks done", n), func() bool { return r.status().Done >= n })
}

// coordinator returns the worker that leads the election, by the value it
// campaigned with, and the token of its leadership.
func (r *schedulerRun) coordinator() (*proc, uint64) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := r.lockd.Election(ctx, defaultElection)
	if err != nil {
		r.t.Fatalf("who coordinates: %v", err)
	}
	p, ok := r.workers[l.Value]
	if !ok {
		r.t.Fatalf("the election is led by %q, not a worker", l.Value)
	}
	return p, l.Token
}

// checkExactlyOnce checks the store at the end of a run: every task done
// exactly once with the right result, no duplicate, the accepted tokens
// never decreasing, and every refused token lower than one accepted.
func (r *schedulerRun) checkExactlyOnce(tasks int) (status, resultsResponse) {
	r.t.Helper()
	st, res := r.status(), r.results()
	if st.Done != tasks || len(res.Accepted) != tasks {
		r.t.Fatalf("status says %d done, %d results accepted; want %d", st.Done, len(res.Accepted), tasks)
	}
	if st.Duplicates != 0 {
		r.t.Fatalf("%d tasks were done twice: a coordinator redid work it should have seen done", st.Duplicates)
	}
	seen := make(map[int]bool)
	for i, a := range res.Accepted {
		if a.Task < 1 || a.Task > tasks || seen[a.Task] {
			r.t.Fatalf("accepted result #%d is for task %d (seen before: %v)", i, a.Task, seen[a.Task])
		}
		seen[a.Task] = true
		if want := fmt.Sprintf("%d^2=%d", a.Task, a.Task*a.Task); a.Result != want {
			r.t.Fatalf("task %d: result %q, want %q", a.Task, a.Result, want)
		}
		if i > 0 && a.Token < res.Accepted[i-1].Token {
			r.t.Fatalf("the store accepted token %d after %d (task %d by %s)", a.Token, res.Accepted[i-1].Token, a.Task, a.Worker)
		}
	}
	for _, x := range res.Rejected {
		if x.Token >= st.Token {
			r.t.Fatalf("the store refused token %d (task %d by %s), which is not stale: highest is %d", x.Token, x.Task, x.Worker, st.Token)
		}
	}
	if st.StaleRejected != len(res.Rejected) {
		r.t.Fatalf("status counts %d stale results, the list has %d", st.StaleRejected, len(res.Rejected))
	}
	return st, res
}

// waitWorkersExit waits for every worker but the dead one to finish by
// itself: a worker exits 0 once it has led and found nothing pending.
func (r *schedulerRun) waitWorkersExit(dead *proc) {
	r.t.Helper()
	for _, p := range r.workers {
		if p != dead {
			p.waitExit(20 * time.Second)
		}
	}
}

func TestScheduler_CoordinatorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lockd cluster and four processes")
	}
	start := time.Now()
	r := startRun(t, testTasks)
	r.waitDone(10, 20*time.Second)

	victim, token := r.coordinator()
	victim.kill()
	killed := time.Now()
	if st := r.status(); st.Done >= testTasks {
		t.Fatalf("all %d tasks were done before the coordinator was killed; the test proves nothing", testTasks)
	}
	servertest.WaitFor(t, 15*time.Second, "a new coordinator", func() bool { return r.status().Token > token })
	t.Logf("killed %s (token %d) with %d tasks done; a new coordinator took over after %v",
		victim.name, token, len(r.results().Accepted), time.Since(killed).Round(time.Millisecond))

	r.waitDone(testTasks, 20*time.Second)
	r.checkExactlyOnce(testTasks)
	r.waitWorkersExit(victim)
	st, res := r.checkExactlyOnce(testTasks) // and nothing changed while they finished
	if st.Coordinator == victim.name {
		t.Fatalf("the store's last coordinator is the killed %s", victim.name)
	}
	var after int
	for _, a := range res.Accepted {
		if a.Token > token {
			after++
		}
	}
	if after == 0 {
		t.Fatalf("no result was accepted with a token above the killed coordinator's %d", token)
	}
	t.Logf("%d tasks done exactly once, %d after the takeover, %d stale results refused; run took %v",
		st.Done, after, st.StaleRejected, time.Since(start).Round(time.Millisecond))
}

// The worker's log lines the pause test watches for (log/slog's text format).
var (
	workingLine  = regexp.MustCompile(`msg=working .*\btask=(\d+) `)
	takeoverLine = regexp.MustCompile(`msg="tasks pending" `)
	// A resumed coordinator ends its term in one of these ways: its
	// result was refused, or it found its leadership lost (or was
	// refused a takeover) before it could post another.
	termEndLine = regexp.MustCompile(`msg=("result refused"|"leadership lost"|superseded) `)
)

func TestScheduler_PausedCoordinatorIsFencedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lockd cluster and four processes")
	}
	start := time.Now()
	r := startRun(t, testTasks)
	r.waitDone(10, 20*time.Second)

	// Pause the coordinator while it works on a task. If the pause comes
	// too late (its result went out already, so it has nothing stale to
	// post when it resumes), try again with the next coordinator.
	var paused *proc
	var token uint64
	for attempt := 1; paused == nil; attempt++ {
		if attempt > 3 {
			t.Fatal("three pauses in a row missed the coordinator's work; is the machine overloaded?")
		}
		paused, token = r.pauseCoordinator(attempt)
	}

	r.waitDone(testTasks, 20*time.Second)
	r.checkExactlyOnce(testTasks)
	r.waitWorkersExit(nil)
	st, res := r.checkExactlyOnce(testTasks) // and nothing changed while they finished
	if st.StaleRejected < 1 {
		t.Fatalf("the paused coordinator's late result was not refused: %+v", st)
	}
	refused := false
	for _, x := range res.Rejected {
		refused = refused || (x.Worker == paused.name && x.Token == token)
	}
	if !refused {
		t.Fatalf("no refused result from %s with token %d: %+v", paused.name, token, res.Rejected)
	}
	t.Logf("%d tasks done exactly once, %d stale results refused; run took %v",
		st.Done, st.StaleRejected, time.Since(start).Round(time.Millisecond))
}

// pauseCoordinator stops the coordinator with SIGSTOP while it works on a
// task, waits until another worker has taken over, and resumes it. It
// returns the paused worker and its token if the worker then posted a
// result that the store refused, or nil if the pause came too late: the
// task's result had gone out before it. A result accepted after the
// takeover fails the test.
func (r *schedulerRun) pauseCoordinator(attempt int) (*proc, uint64) {
	t := r.t
	t.Helper()
	coord, token := r.coordinator()
	marks := make(map[*proc]int) // where each worker's log stood before the pause
	for _, p := range r.workers {
		marks[p] = p.lineCount()
	}
	_, m := coord.waitLine(workingLine, marks[coord], 10*time.Second)
	coord.signal(syscall.SIGSTOP)
	stopped := time.Now()
	task, _ := strconv.Atoi(m[1])

	// Another worker leads once the paused one's session has expired.
	// Resume the paused one as soon as the new coordinator has taken
	// over, before it posts anything: by then the takeover alone must
	// have raised the store's fence.
	var next *proc
	servertest.WaitFor(t, 15*time.Second, "another worker to take over", func() bool {
		for p, from := range marks {
			if p != coord && p.hasLine(takeoverLine, from) {
				next = p
				return true
			}
		}
		return false
	})
	st := r.status()
	if st.Token <= token {
		t.Fatalf("%s has taken over, but the store's highest token is still %d, not above the paused %d",
			next.name, st.Token, token)
	}
	if st.Done >= testTasks {
		t.Fatal("all tasks were done before the paused coordinator resumed; the test proves nothing")
	}
	postedBefore := hasResult(r.results().Accepted, task, token)
	t.Logf("paused %s (token %d) at task %d; %s took over after %v",
		coord.name, token, task, next.name, time.Since(stopped).Round(time.Millisecond))
	coord.signal(syscall.SIGCONT)

	_, end := coord.waitLine(termEndLine, marks[coord], 10*time.Second)
	if end[1] == `"result refused"` {
		return coord, token
	}
	if !postedBefore && hasResult(r.results().Accepted, task, token) {
		t.Fatalf("the store accepted %s's result for task %d with token %d after a newer coordinator had taken over",
			coord.name, task, token)
	}
	t.Logf("attempt %d: the pause came after %s had posted task %d (%s); trying again", attempt, coord.name, task, end[1])
	return nil, 0
}

func hasResult(rs []result, task int, token uint64) bool {
	for _, x := range rs {
		if x.Task == task && x.Token == token {
			return true
		}
	}
	return false
}
