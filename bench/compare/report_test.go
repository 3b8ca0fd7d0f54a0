package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
)

func row(bench string, n int, rate float64, p50, p99 time.Duration) load.Row {
	return load.Row{Bench: bench, N: n, Ops: int(rate * 10), Seconds: 10, Rate: rate,
		Latency: load.Latency{P50: p50, P99: p99, Max: 2 * p99}}
}

func zero() *uint64 { var z uint64; return &z }

// results are three systems' rows, made up so that every target has a
// known outcome.
func results() []Result {
	ms := time.Millisecond
	ka := row("keepalive", 1000, 30000, ms, 4*ms)
	ka.RaftEntries = zero()
	eka := row("keepalive", 1000, 15000, 3*ms, 15*ms)
	eka.RaftEntries = zero()
	return []Result{
		// out of order on purpose: the report puts lockd first
		{System: ZooKeeper, Callers: 64, NotApplicable: map[string]string{"keepalive": ZooKeeperKeepalive},
			Rows: []load.Row{row("locks", 1, 500, 1900*time.Microsecond, 5*ms), row("locks", 64, 3500, 17*ms, 37*ms),
				row("handoff", 2, 400, 2*ms, 6*ms)}},
		{System: Etcd, Callers: 64, Rows: []load.Row{row("locks", 1, 480, 2*ms, 4*ms), row("locks", 64, 3000, 20*ms, 45*ms),
			row("handoff", 2, 300, 3*ms, 8*ms), eka}},
		{System: Lockd, Callers: 64, Rows: []load.Row{row("locks", 1, 600, 1800*time.Microsecond, 3*ms), row("locks", 64, 6000, 10*ms, 20*ms),
			row("handoff", 2, 700, 1500*time.Microsecond, 1800*time.Microsecond), ka}},
	}
}

func target(t *testing.T, rep Report, prefix string) Target {
	t.Helper()
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q in %+v", prefix, rep.Targets)
	return Target{}
}

func line(t *testing.T, rep Report, bench string, n int, metric string) Line {
	t.Helper()
	for _, l := range rep.Lines {
		if l.Bench == bench && l.N == n && l.Metric == metric {
			return l
		}
	}
	t.Fatalf("no line %s %d %s", bench, n, metric)
	return Line{}
}

func TestReport_RatiosAndTargets(t *testing.T) {
	rep := NewReport(results())
	if got := []string{rep.Results[0].System, rep.Results[1].System, rep.Results[2].System}; got[0] != Lockd || got[1] != Etcd || got[2] != ZooKeeper {
		t.Fatalf("results in order %v", got)
	}
	l := line(t, rep, "locks", 64, "cycles/s")
	if l.Ratios[Etcd] != 2 || l.Ratios[ZooKeeper] != 6000.0/3500 {
		t.Errorf("locks 64 ratios %v", l.Ratios)
	}
	if _, ok := line(t, rep, "locks", 64, "errors").Ratios[Etcd]; ok {
		t.Error("errors have a ratio")
	}
	ka := line(t, rep, "keepalive", 1000, "renewals/s")
	if _, ok := ka.Values[ZooKeeper]; ok || len(ka.NotApplicable) != 1 || ka.NotApplicable[0] != ZooKeeper {
		t.Errorf("keepalive line %+v: want ZooKeeper not applicable", ka)
	}
	if got := ka.cell(ZooKeeper); got != "n/a" {
		t.Errorf("ZooKeeper's keepalive cell %q", got)
	}
	// 6000 is 2x etcd but not 2x ZooKeeper's 3500, the better peer.
	if tg := target(t, rep, "uncontended cycles/s at 64"); tg.Status != NotMet || !strings.Contains(tg.Detail, "zookeeper 3500/s") {
		t.Errorf("64 workers: %+v", tg)
	}
	if tg := target(t, rep, "p50 per cycle at 1 worker"); tg.Status != Met {
		t.Errorf("1 worker: %+v", tg)
	}
	// commit latency 0.9 ms (half of 1.8), limit 1.9 ms: p99 1.8 ms is within.
	if rep.CommitLatencyMs == nil || *rep.CommitLatencyMs != 0.9 {
		t.Errorf("commit latency %v", rep.CommitLatencyMs)
	}
	if tg := target(t, rep, "hand-off p99 at 2 waiters"); tg.Status != Met {
		t.Errorf("hand-off: %+v", tg)
	}
	if tg := target(t, rep, "keepalive at 1000 sessions"); tg.Status != Met || strings.Contains(tg.Name, "stated at 64") {
		t.Errorf("keepalive: %+v", tg)
	}
}

// A row that was not run leaves its targets unmeasured, and dirt in the
// keepalive row fails its target whatever the rate.
func TestReport_UnmeasuredAndDirty(t *testing.T) {
	rs := results()
	for i := range rs {
		if rs[i].System == Lockd {
			rs[i].Callers = 16
			rs[i].Rows = rs[i].Rows[3:] // keepalive only
			rs[i].Rows[0].Lapsed = 1
		}
	}
	rep := NewReport(rs)
	for _, name := range []string{"uncontended cycles/s at 64", "p50 per cycle at 1 worker"} {
		if tg := target(t, rep, name); tg.Status != Unmeasured {
			t.Errorf("%s: %+v", name, tg)
		}
	}
	if rep.CommitLatencyMs != nil {
		t.Errorf("commit latency %v without a 1-worker row", *rep.CommitLatencyMs)
	}
	tg := target(t, rep, "keepalive at 1000 sessions")
	if tg.Status != NotMet || !strings.Contains(tg.Name, "stated at 64") || !strings.Contains(tg.Detail, "1 lapsed") {
		t.Errorf("keepalive: %+v", tg)
	}
	// lockd ran no handoff row: its target is there, unmeasured.
	if tg := target(t, rep, "hand-off p99 at 2 waiters"); tg.Status != Unmeasured {
		t.Errorf("hand-off without lockd's row: %+v", tg)
	}
	if l := line(t, rep, "locks", 1, "cycles/s"); l.cell(Lockd) != "-" || len(l.Ratios) != 0 {
		t.Errorf("lockd's missing locks row shows %q, ratios %v", l.cell(Lockd), l.Ratios)
	}
}

// With no rows at all every target is there, unmeasured.
func TestReport_Empty(t *testing.T) {
	rep := NewReport(nil)
	if len(rep.Targets) != 5 {
		t.Fatalf("%d targets: %+v", len(rep.Targets), rep.Targets)
	}
	for _, tg := range rep.Targets {
		if tg.Status != Unmeasured {
			t.Errorf("%+v", tg)
		}
	}
	var md bytes.Buffer
	rep.Markdown(&md)
	if !strings.Contains(md.String(), "lockd: not run") || !strings.Contains(md.String(), "unmeasured") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// The report survives a trip through the files the script passes
// between runs, and prints every row, the notes and the targets.
func TestReport_FilesAndOutput(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, r := range results() {
		r.Endpoints = []string{"a:1", "a:2"}
		r.Leader = "a:1"
		r.Started = time.Date(2026, 1, 1, 0, 0, len(r.System), 0, time.UTC) // etcd, then lockd, then ZooKeeper
		if r.System == Etcd {
			r.Error = "handoff: boom"
			r.Endpoints[0], r.Leader = "b:1", "a:2"
		}
		p := filepath.Join(dir, r.System+".json")
		if err := WriteJSON(p, r); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var rs []Result
	for _, p := range paths {
		r, err := ReadResult(p)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rep := NewReport(rs)
	rep.Commit, rep.Command = "abc123", "make bench-compare"
	var text, md bytes.Buffer
	rep.Print(&text)
	rep.Markdown(&md)
	for _, want := range []string{"locks, 64 workers", "keepalive, 1000 sessions", "lockd/ZooKeeper", "2.00x", "n/a",
		"etcd: the run stopped: handoff: boom", "lockd: the 1-worker row's session was on the leader (a:1)",
		"etcd: the 1-worker row's session was on a follower (b:1)", "not applicable", "[not met]", "[met]"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"## 2026-", ", commit abc123: lockd, etcd and ZooKeeper side by side\n", "**Commit:** `abc123`", "**Command:** `make bench-compare`", "| row | metric | lockd | etcd | ZooKeeper |",
		"|---|", "| target | status | measured |", "**Order:** etcd, lockd, ZooKeeper, one at a time", "Commit latency (for the hand-off target): 0.90 ms", "**Machine:**"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Lines) != len(rep.Lines) || len(back.Targets) != len(rep.Targets) {
		t.Errorf("JSON round trip: %v, %d lines, %d targets", err, len(back.Lines), len(back.Targets))
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Fatal(err)
	}
}

// failoverResults are each system's failover trials, as `lockd-compare
// failover` writes them beside the rows: lockd's p50 (1.0 s) beats etcd's
// (1.2 s) and ZooKeeper's made-before-the-kill session (1.1 s), but not
// ZooKeeper's new session per try (0.8 s), which is not judged.
func failoverResults() []Result {
	return []Result{
		{System: Lockd, Version: "lockd test", Failover: &Failover{Trials: 5, Workers: 8, Settle: 2,
			Kill: Times{Times: secs(1.3, 0.9, 1.0, 1.1, 0.95)}, LoadCycles: 100, LoadErrors: 7}},
		{System: Etcd, Failover: &Failover{Trials: 5, Workers: 8, Settle: 2, Killed: []string{"e:1", "e:2", "e:1", "e:3", "e:2"},
			Kill: Times{Times: secs(1.2, 1.4, 1.1, 1.2, 1.5)}}},
		{System: ZooKeeper, Failover: &Failover{Trials: 5, Workers: 8, Settle: 2,
			Kill:       Times{Times: secs(1.1, 1.1, 1.2, 1.05, 2)},
			NewSession: &Times{Times: secs(0.8, 0.7, 0.9, 0.8), Failed: 1}}},
	}
}

// The failover results merge with the rows of the same system; the row
// has every system's min/p50/max, the ratios, ZooKeeper's second column,
// and a target judged on the sessions made before the kill.
func TestReport_Failover(t *testing.T) {
	rs := results()
	for i := range rs {
		rs[i].Endpoints = []string{rs[i].System + ":1"}
		rs[i].Started = time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
	}
	for i, r := range failoverResults() {
		r.Started = time.Date(2026, 1, 1, 1, i, 0, 0, time.UTC)
		rs = append(rs, r)
	}
	rs[len(rs)-1].Error = "failover: boom"
	rep := NewReport(rs)
	if len(rep.Results) != 3 {
		t.Fatalf("%d results after merging", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Failover == nil || len(r.Rows) == 0 || len(r.Endpoints) != 1 || r.Started.Hour() != 0 {
			t.Errorf("%s merged into %+v", r.System, r)
		}
	}
	if rep.Results[0].Version != "lockd test" {
		t.Errorf("lockd's version %q: want the failover result's, the rows' had none", rep.Results[0].Version)
	}
	if zk := rep.Results[2]; zk.Error != "failover: boom" || zk.NotApplicable["keepalive"] == "" {
		t.Errorf("ZooKeeper merged into error %q, not applicable %v", zk.Error, zk.NotApplicable)
	}
	p50 := line(t, rep, failoverBench, 5, "p50 ms")
	if p50.Values[Lockd] != 1000 || p50.Values[Etcd] != 1200 || p50.Values[ZooKeeper] != 1100 {
		t.Errorf("p50 line %v", p50.Values)
	}
	if p50.Ratios[Etcd] != 1000.0/1200 || p50.Ratios[ZooKeeper] != 1000.0/1100 {
		t.Errorf("p50 ratios %v", p50.Ratios)
	}
	if l := line(t, rep, failoverBench, 5, "max ms"); l.Values[ZooKeeper] != 2000 || l.Values[Lockd] != 1300 {
		t.Errorf("max line %v", l.Values)
	}
	ns := line(t, rep, failoverBench, 5, "new-session p50 ms")
	if len(ns.Values) != 1 || ns.Values[ZooKeeper] != 800 || len(ns.Ratios) != 0 || ns.cell(Lockd) != "-" {
		t.Errorf("new-session p50 line %+v", ns)
	}
	if l := line(t, rep, failoverBench, 5, "new-session failed"); l.Values[ZooKeeper] != 1 {
		t.Errorf("new-session failed %v", l.Values)
	}
	if l := line(t, rep, failoverBench, 5, "load errors"); l.Values[Lockd] != 7 || len(l.Ratios) != 0 {
		t.Errorf("load errors %+v", l)
	}
	tg := target(t, rep, "failover after kill -9")
	if tg.Status != Met || !strings.Contains(tg.Detail, "lockd 1000 ms") || !strings.Contains(tg.Detail, "better peer ZooKeeper") ||
		!strings.Contains(tg.Detail, "new session per try 800 ms") {
		t.Errorf("failover target %+v", tg)
	}
	var text, md bytes.Buffer
	rep.Print(&text)
	rep.Markdown(&md)
	for _, want := range []string{"failover (kill -9 of the leader), 5 trials", "new-session p50 ms", "0.83x",
		"etcd, failover: the leaders killed, trial by trial: e:1, e:2, e:1, e:3, e:2", "ZooKeeper, failover: the min/p50/max lines time a session created before the kill",
		"failover: each system at its default timing settings", "[met] failover after kill -9"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"- **Failover:** lockd, etcd, ZooKeeper: 5 trials, 8 background workers, 2 s settle each\n", "\nFailover: each system at its default",
		"| failover (kill -9 of the leader), 5 trials | min ms | 900.00 | 1100.00 | 1050.00 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// A failed trial of lockd's fails the target whatever its median; a
// slower median fails it; without a peer's or lockd's trials it is
// unmeasured, and without any the row is absent.
func TestReport_FailoverTarget(t *testing.T) {
	rs := failoverResults()
	rs[0].Failover.Kill.Failed = 1
	if tg := target(t, NewReport(rs), "failover after"); tg.Status != NotMet || !strings.Contains(tg.Detail, "1 of 5 trials took no lock") {
		t.Errorf("with a failed trial: %+v", tg)
	}
	rs = failoverResults()
	rs[0].Failover.Kill.Times = secs(1.15, 1.15, 1.15)
	if tg := target(t, NewReport(rs), "failover after"); tg.Status != NotMet {
		t.Errorf("slower than ZooKeeper's session made before the kill: %+v", tg)
	}
	rs = failoverResults()
	rs[1].Failover, rs[2].Failover = nil, &Failover{Trials: 5, Kill: Times{Failed: 5}}
	if tg := target(t, NewReport(rs), "failover after"); tg.Status != Unmeasured {
		t.Errorf("no peer trial succeeded: %+v", tg)
	}
	rs = failoverResults()[1:]
	if tg := target(t, NewReport(rs), "failover after"); tg.Status != Unmeasured {
		t.Errorf("lockd not run: %+v", tg)
	}
	// Systems that ran different trial counts get a block each, and the
	// Markdown says which ran what.
	rs = failoverResults()
	rs[1].Failover.Trials = 3
	rep := NewReport(rs)
	line(t, rep, failoverBench, 3, "p50 ms")
	if l := line(t, rep, failoverBench, 5, "p50 ms"); len(l.Values) != 2 || len(l.Ratios) != 1 {
		t.Errorf("5-trial p50 line %+v", l)
	}
	var md bytes.Buffer
	rep.Markdown(&md)
	if want := "- **Failover:** lockd 5 trials, 8 background workers, 2 s settle; etcd 3 trials,"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	rep = NewReport(results())
	for _, l := range rep.Lines {
		if l.Bench == failoverBench {
			t.Fatalf("a failover line without failover trials: %+v", l)
		}
	}
	md.Reset()
	rep.Markdown(&md)
	if strings.Contains(md.String(), "Failover") {
		t.Errorf("markdown speaks of failover without trials:\n%s", md.String())
	}
	// Without ZooKeeper's second column, its lines are left out.
	rs = failoverResults()[:2]
	for _, l := range NewReport(rs).Lines {
		if strings.HasPrefix(l.Metric, "new-session") {
			t.Errorf("line %+v without a second column", l)
		}
	}
}

func TestZooKeeper_SequenceAndKeepalive(t *testing.T) {
	for node, want := range map[string]int{"/a/b/_c_0123abcd-lock-0000000042": 42, "_c_x-lock-0000000007": 7} {
		if got, err := sequence(node); err != nil || got != want {
			t.Errorf("sequence(%q) = %d, %v; want %d", node, got, err, want)
		}
	}
	if _, err := sequence("/a/b/other"); err == nil {
		t.Error("a node that is not a lock node has a sequence")
	}
	z, err := newZooKeeper([]string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if z.NotApplicable("keepalive") == "" || z.NotApplicable("locks") != "" || z.NotApplicable("handoff") != "" {
		t.Error("ZooKeeper: only the keepalive rows are not applicable")
	}
}

// The kv rows come after the others, in the kv bench's order, with the
// conflicts of kv-cas and the setup of kv-watch; every ratio line names
// the better peer (the higher rate, the lower latency).
func TestReport_KVRowsAndBetterPeer(t *testing.T) {
	ms := time.Millisecond
	cas := func(rate float64, conflicts int64) load.Row {
		r := row("kv-cas", 16, rate, 20*ms, 90*ms)
		r.CASFailed, r.Keys = conflicts, 4
		return r
	}
	watch := func(p50 time.Duration, setup float64) load.Row {
		r := row("kv-watch", 1000, 5, p50, 2*p50)
		r.Setup = setup
		return r
	}
	rs := []Result{
		{System: Lockd, Rows: []load.Row{watch(200*ms, 0.3), cas(150, 1800), row("kv-put", 1, 300, 2*ms, 9*ms), row("locks", 1, 600, 2*ms, 3*ms)}},
		{System: Etcd, Rows: []load.Row{row("kv-put", 1, 400, 3*ms, 8*ms), cas(200, 900), watch(20*ms, 1.5)}},
		{System: ZooKeeper, Rows: []load.Row{row("kv-put", 1, 500, 4*ms, 6*ms), cas(100, 3000), watch(50*ms, 4)}},
	}
	rep := NewReport(rs)
	var order []string
	for _, l := range rep.Lines {
		if name := rowName(l); len(order) == 0 || order[len(order)-1] != name {
			order = append(order, name)
		}
	}
	if want := "locks, 1 workers|kv-put, 1 workers|kv-cas, 16 workers|kv-watch, 1000 watchers"; strings.Join(order, "|") != want {
		t.Errorf("rows in order %q, want %q", order, want)
	}
	// Rates: the higher is better. Latencies: the lower.
	for _, tc := range []struct {
		bench, metric, better string
		ratio                 float64
	}{
		{"kv-put", "puts/s", ZooKeeper, 300.0 / 500},
		{"kv-put", "p50 ms", Etcd, 2.0 / 3},
		{"kv-put", "p99 ms", ZooKeeper, 9.0 / 6},
		{"kv-cas", "increments/s", Etcd, 150.0 / 200},
		{"kv-watch", "p50 ms", Etcd, 10},
	} {
		l := line(t, rep, tc.bench, map[string]int{"kv-put": 1, "kv-cas": 16, "kv-watch": 1000}[tc.bench], tc.metric)
		if l.Better != tc.better || math.Abs(l.BetterRatio-tc.ratio) > 1e-9 {
			t.Errorf("%s %s: better %s %.3f, want %s %.3f", tc.bench, tc.metric, l.Better, l.BetterRatio, tc.better, tc.ratio)
		}
	}
	if l := line(t, rep, "kv-cas", 16, "cas failed"); l.Values[Lockd] != 1800 || l.Values[ZooKeeper] != 3000 || l.Better != "" {
		t.Errorf("cas failed line %+v", l)
	}
	if l := line(t, rep, "kv-watch", 1000, "setup ms"); l.cell(Etcd) != "1500.00" || l.Better != "" {
		t.Errorf("setup line %+v", l)
	}
	if l := line(t, rep, "kv-put", 1, "errors"); l.Better != "" {
		t.Errorf("errors have a better peer: %+v", l)
	}
	var text, md bytes.Buffer
	rep.Print(&text)
	rep.Markdown(&md)
	for _, want := range []string{"lockd/better peer", "0.60x (ZooKeeper)", "0.75x (etcd)", "kv-watch, 1000 watchers"} {
		if !strings.Contains(text.String(), want) || !strings.Contains(md.String(), want) {
			t.Errorf("%q missing:\n%s\n%s", want, text.String(), md.String())
		}
	}
	if strings.Contains(md.String(), "keepalive sessions with") {
		t.Errorf("a run without keepalive rows describes them:\n%s", md.String())
	}
}
