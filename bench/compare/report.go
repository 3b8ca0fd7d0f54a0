package compare

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// Report compares the results of one run.
type Report struct {
	Date    time.Time `json:"date"`
	Machine string    `json:"machine"`
	Cores   int       `json:"cores"`
	Commit  string    `json:"commit,omitempty"`
	Command string    `json:"command,omitempty"`
	// Results are the systems' own results, lockd first.
	Results []Result `json:"results"`
	// Lines are every row's metrics side by side.
	Lines []Line `json:"lines"`
	// CommitLatencyMs is the commit latency the hand-off target is held
	// to (see CommitLatencyHow), if it was measured.
	CommitLatencyMs *float64 `json:"commit_latency_ms,omitempty"`
	Targets         []Target `json:"targets"`
	// EtcdAPI compares lockd-etcd with etcd on the etcd-API rows, if any
	// ran; they are in no Line.
	EtcdAPI *APIReport `json:"etcd_api,omitempty"`
}

// BetterHow says how the report picks the better peer of a line.
const BetterHow = "lockd/better peer is lockd's value over the better of etcd's and ZooKeeper's " +
	"(the higher rate, the lower latency), named in brackets"

// ran says whether any system ran a row of bench.
func (rep Report) ran(bench string) bool {
	for _, r := range rep.Results {
		for _, row := range r.Rows {
			if row.Bench == bench {
				return true
			}
		}
	}
	return false
}

// CommitLatencyHow says how the report measures lockd's commit latency.
const CommitLatencyHow = "half of lockd's p50 cycle at 1 worker: a lone client's write request, " +
	"one Raft commit (fsynced on every node's log) plus its HTTP round trip, so an upper bound on the commit alone"

// Line is one metric of one row, for every system that ran it.
type Line struct {
	Bench  string `json:"bench"`
	N      int    `json:"n"`
	Metric string `json:"metric"`
	// Values by system; a system that did not run the row (or could not
	// count the metric) has none.
	Values map[string]float64 `json:"values"`
	// NotApplicable lists the systems that have no counterpart of the
	// row.
	NotApplicable []string `json:"not_applicable,omitempty"`
	// Ratios are lockd's value over each peer's, by peer.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// Better is the peer with the better value (the higher rate, the
	// lower latency), and BetterRatio lockd's value over its.
	Better      string  `json:"better,omitempty"`
	BetterRatio float64 `json:"better_ratio,omitempty"`
}

// Target is one of the targets lockd is held to.
type Target struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Met, NotMet or Unmeasured
	Detail string `json:"detail"`
}

// Target statuses.
const (
	Met        = "met"
	NotMet     = "not met"
	Unmeasured = "unmeasured"
)

// A metric of a row: how it is named, read and shown, and whether the
// lockd/peer ratio is shown for it.
type metric struct {
	name  string
	get   func(load.Row) (float64, bool)
	ratio bool
	ms    bool
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func metrics(bench string) []metric {
	unit := load.Row{Bench: bench}.Unit()
	ms := []metric{
		{unit + "/s", func(r load.Row) (float64, bool) { return r.Rate, true }, true, false},
		{"p50 ms", func(r load.Row) (float64, bool) { return msOf(r.Latency.P50), true }, true, true},
		{"p99 ms", func(r load.Row) (float64, bool) { return msOf(r.Latency.P99), true }, true, true},
		{"max ms", func(r load.Row) (float64, bool) { return msOf(r.Latency.Max), true }, false, true},
	}
	switch bench {
	case "kv-cas":
		ms = append(ms, metric{name: "cas failed", get: func(r load.Row) (float64, bool) { return float64(r.CASFailed), true }})
	case "kv-watch":
		ms = append(ms, metric{name: "setup ms", ms: true, get: func(r load.Row) (float64, bool) { return r.Setup * 1000, true }})
	case "keepalive", "keepalive-batch":
		ms = append(ms,
			metric{name: "lapsed", get: func(r load.Row) (float64, bool) { return float64(r.Lapsed), true }},
			metric{name: "wrong expiries", get: func(r load.Row) (float64, bool) { return float64(r.WrongExpiries), true }},
			metric{name: "writes", get: func(r load.Row) (float64, bool) {
				if r.RaftEntries == nil {
					return 0, false
				}
				return float64(*r.RaftEntries), true
			}})
	}
	return append(ms, metric{name: "errors", get: func(r load.Row) (float64, bool) { return float64(r.Errors), true }})
}

type rowKey struct {
	bench string
	n     int
}

// NewReport compares results (in any order; lockd's first in the
// report).
func NewReport(results []Result) Report {
	rep := Report{Date: time.Now().UTC()}
	rep.Machine, rep.Cores = Machine()
	for _, name := range Systems {
		found := false
		for _, r := range results {
			switch {
			case r.System != name:
			case found:
				last := &rep.Results[len(rep.Results)-1]
				*last = merge(*last, r)
			default:
				rep.Results = append(rep.Results, r)
				found = true
			}
		}
	}
	rows := map[string]map[rowKey]load.Row{}
	var keys []rowKey
	for _, r := range rep.Results {
		rows[r.System] = map[rowKey]load.Row{}
		for _, row := range r.Rows {
			if isAPIBench(row.Bench) {
				continue // the etcd-API report's
			}
			k := rowKey{row.Bench, row.N}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			rows[r.System][k] = row
		}
	}
	slices.SortStableFunc(keys, func(a, b rowKey) int {
		if c := slices.Index(RowBenches, a.bench) - slices.Index(RowBenches, b.bench); c != 0 {
			return c
		}
		return a.n - b.n
	})
	for _, k := range keys {
		for _, m := range metrics(k.bench) {
			l := Line{Bench: k.bench, N: k.n, Metric: m.name, Values: map[string]float64{}}
			for _, r := range rep.Results {
				if _, na := r.NotApplicable[benchOf(k.bench)]; na {
					l.NotApplicable = append(l.NotApplicable, r.System)
				}
				if row, ok := rows[r.System][k]; ok {
					if v, ok := m.get(row); ok {
						l.Values[r.System] = v
					}
				}
			}
			if m.ratio {
				l.setRatios(!m.ms)
			}
			rep.Lines = append(rep.Lines, l)
		}
	}
	rep.failoverLines()
	rep.targets(rows)
	rep.EtcdAPI = newAPIReport(results)
	return rep
}

// hasMain says whether the report has anything beside the etcd-API
// rows: a row of lockd's, etcd's or ZooKeeper's, or failover trials.
func (rep Report) hasMain() bool {
	return len(rep.Lines) > 0 || rep.hasFailover() || rep.EtcdAPI == nil
}

// setRatios sets lockd's value over each peer's that has one, and over
// the better peer's: the one with the higher value if higher is better,
// the lower otherwise.
func (l *Line) setRatios(higherBetter bool) {
	v, ok := l.Values[Lockd]
	if !ok {
		return
	}
	for _, peer := range Systems[1:] {
		if p, ok := l.Values[peer]; ok && p > 0 {
			if l.Ratios == nil {
				l.Ratios = map[string]float64{}
			}
			l.Ratios[peer] = v / p
			if b, ok := l.Values[l.Better]; l.Better == "" || (ok && (p > b) == higherBetter && p != b) {
				l.Better, l.BetterRatio = peer, v/p
			}
		}
	}
}

// merge folds b, another result of a's system (its failover trials, say),
// into a: the rows' fields come from the result that ran rows.
func merge(a, b Result) Result {
	if len(a.Endpoints) == 0 && len(b.Endpoints) > 0 {
		a.Endpoints, a.Leader, a.Warmup, a.Callers, a.TTL = b.Endpoints, b.Leader, b.Warmup, b.Callers, b.TTL
	}
	if a.Version == "" {
		a.Version = b.Version
	}
	if a.Started.IsZero() || (!b.Started.IsZero() && b.Started.Before(a.Started)) {
		a.Started = b.Started
	}
	a.Rows = slices.Concat(a.Rows, b.Rows)
	if len(b.NotApplicable) > 0 {
		na := map[string]string{}
		for k, v := range a.NotApplicable {
			na[k] = v
		}
		for k, v := range b.NotApplicable {
			na[k] = v
		}
		a.NotApplicable = na
	}
	if a.Failover == nil {
		a.Failover = b.Failover
	}
	switch {
	case a.Error == "":
		a.Error = b.Error
	case b.Error != "":
		a.Error += "; " + b.Error
	}
	return a
}

// The failover row's name in Lines.
const failoverBench = "failover"

// A metric of the failover row.
type failoverMetric struct {
	name  string
	get   func(*Failover) (float64, bool)
	ratio bool
	// newSession marks the lines of ZooKeeper's second column, shown
	// only when a system has one.
	newSession bool
}

func failoverMetrics() []failoverMetric {
	stat := func(which int, newSession bool) func(*Failover) (float64, bool) {
		return func(f *Failover) (float64, bool) {
			t := f.Kill
			if newSession {
				if f.NewSession == nil {
					return 0, false
				}
				t = *f.NewSession
			}
			lo, p50, hi, ok := t.Stats()
			return msOf([]time.Duration{lo, p50, hi}[which]), ok
		}
	}
	return []failoverMetric{
		{name: "min ms", get: stat(0, false), ratio: true},
		{name: "p50 ms", get: stat(1, false), ratio: true},
		{name: "max ms", get: stat(2, false), ratio: true},
		{name: "failed", get: func(f *Failover) (float64, bool) { return float64(f.Kill.Failed), true }},
		{name: "new-session min ms", get: stat(0, true), newSession: true},
		{name: "new-session p50 ms", get: stat(1, true), newSession: true},
		{name: "new-session max ms", get: stat(2, true), newSession: true},
		{name: "new-session failed", newSession: true, get: func(f *Failover) (float64, bool) {
			if f.NewSession == nil {
				return 0, false
			}
			return float64(f.NewSession.Failed), true
		}},
		{name: "load cycles", get: func(f *Failover) (float64, bool) { return float64(f.LoadCycles), true }},
		{name: "load errors", get: func(f *Failover) (float64, bool) { return float64(f.LoadErrors), true }},
	}
}

// failoverLines adds the failover row's lines, one block per trial count
// (every system runs the same count unless told otherwise).
func (rep *Report) failoverLines() {
	var counts []int
	newSession := false
	for _, r := range rep.Results {
		if f := r.Failover; f != nil {
			if !slices.Contains(counts, f.Trials) {
				counts = append(counts, f.Trials)
			}
			newSession = newSession || f.NewSession != nil
		}
	}
	slices.Sort(counts)
	for _, n := range counts {
		for _, m := range failoverMetrics() {
			if m.newSession && !newSession {
				continue
			}
			l := Line{Bench: failoverBench, N: n, Metric: m.name, Values: map[string]float64{}}
			for _, r := range rep.Results {
				if f := r.Failover; f != nil && f.Trials == n {
					if v, ok := m.get(f); ok {
						l.Values[r.System] = v
					}
				}
			}
			if m.ratio {
				l.setRatios(false)
			}
			rep.Lines = append(rep.Lines, l)
		}
	}
}

// failover returns system's failover trials, or nil.
func (rep *Report) failover(system string) *Failover {
	for _, r := range rep.Results {
		if r.System == system {
			return r.Failover
		}
	}
	return nil
}

// Machine describes this machine: its CPU model and memory, and the
// number of CPUs this process may use (what nproc prints).
func Machine() (string, int) {
	model, mem := "unknown CPU", ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close() // read only
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", kb/(1<<20))
		}
	}
	return model + mem, runtime.NumCPU()
}

// targets fills in the targets lockd is held to.
func (rep *Report) targets(rows map[string]map[rowKey]load.Row) {
	get := func(sys, bench string, n int) (load.Row, bool) {
		r, ok := rows[sys][rowKey{bench, n}]
		return r, ok
	}
	// better returns the better peer's row by pick (which returns true if
	// a is better than b).
	better := func(bench string, n int, pick func(a, b load.Row) bool) (string, load.Row, bool) {
		var name string
		var best load.Row
		found := false
		for _, p := range Systems[1:] {
			if r, ok := get(p, bench, n); ok && (!found || pick(r, best)) {
				name, best, found = p, r, true
			}
		}
		return name, best, found
	}
	add := func(name, status, detail string) {
		rep.Targets = append(rep.Targets, Target{Name: name, Status: status, Detail: detail})
	}
	status := func(ok bool) string {
		if ok {
			return Met
		}
		return NotMet
	}

	name := "uncontended cycles/s at 64 workers: at least 2x the better of etcd and ZooKeeper"
	l, lok := get(Lockd, "locks", 64)
	pn, p, pok := better("locks", 64, func(a, b load.Row) bool { return a.Rate > b.Rate })
	if lok && pok && p.Rate > 0 {
		add(name, status(l.Rate >= 2*p.Rate), fmt.Sprintf("lockd %.0f/s, %s %.0f/s: %.2fx", l.Rate, pn, p.Rate, l.Rate/p.Rate))
	} else {
		add(name, Unmeasured, "no 64-worker locks row for lockd and a peer")
	}

	name = "p50 per cycle at 1 worker: no more than the better of etcd and ZooKeeper"
	l, lok = get(Lockd, "locks", 1)
	pn, p, pok = better("locks", 1, func(a, b load.Row) bool { return a.Latency.P50 < b.Latency.P50 })
	if lok && pok && l.Ops > 0 && p.Ops > 0 {
		add(name, status(l.Latency.P50 <= p.Latency.P50), fmt.Sprintf("lockd %.2f ms, %s %.2f ms", msOf(l.Latency.P50), pn, msOf(p.Latency.P50)))
	} else {
		add(name, Unmeasured, "no 1-worker locks row for lockd and a peer")
	}

	var commit float64
	if l, ok := get(Lockd, "locks", 1); ok && l.Ops > 0 {
		commit = msOf(l.Latency.P50) / 2
		rep.CommitLatencyMs = &commit
	}
	if len(rep.keys("handoff")) == 0 {
		add("hand-off p99: no more than one commit latency + 1 ms", Unmeasured, "no handoff rows")
	}
	for _, k := range rep.keys("handoff") {
		name := fmt.Sprintf("hand-off p99 at %d waiters: no more than one commit latency + 1 ms", k)
		h, _ := get(Lockd, "handoff", k)
		switch {
		case h.Ops == 0:
			add(name, Unmeasured, "no grants measured for lockd at this count")
		case rep.CommitLatencyMs == nil:
			add(name, Unmeasured, "commit latency unmeasured (no 1-worker locks row for lockd)")
		default:
			p99 := msOf(h.Latency.P99)
			add(name, status(p99 <= commit+1), fmt.Sprintf("lockd p99 %.2f ms, limit %.2f ms (commit latency %.2f ms + 1 ms)", p99, commit+1, commit))
		}
	}

	callers := 0
	for _, r := range rep.Results {
		if r.System == Lockd {
			callers = r.Callers
		}
	}
	if len(rep.keys("keepalive")) == 0 {
		add("keepalive: at least 1.5x etcd's KeepAliveOnce rate at 64 callers", Unmeasured, "no keepalive rows")
	}
	for _, kb := range []struct{ bench, how string }{
		{"keepalive", "one request a renewal; etcd's KeepAliveOnce"},
		{"keepalive-batch", "lockd's one request for several sessions; etcd's KeepAlive stream"},
	} {
		keepaliveTargets(kb.bench, kb.how, callers, rep.keys(kb.bench), get, add, status)
	}

	rep.failoverTarget()
}

// keepaliveTargets adds the target of each row of bench (keepalive or
// keepalive-batch; how says what each system sends): lockd at least 1.5x
// etcd's rate, and clean.
func keepaliveTargets(bench, how string, callers int, counts []int, get func(sys, bench string, n int) (load.Row, bool),
	add func(name, status, detail string), status func(bool) string) {
	for _, k := range counts {
		name := fmt.Sprintf("%s at %d sessions, %d callers (%s): at least 1.5x etcd's rate, with 0 wrong expiries, 0 lapsed, 0 errors, 0 writes", bench, k, callers, how)
		if callers != 64 {
			name += " (the target is stated at 64 callers)"
		}
		l, _ := get(Lockd, bench, k)
		e, eok := get(Etcd, bench, k)
		if !eok || e.Rate == 0 || l.Ops == 0 {
			add(name, Unmeasured, "no keepalive row at this count for lockd and etcd")
			continue
		}
		writes := "unknown"
		if l.RaftEntries != nil {
			writes = fmt.Sprint(*l.RaftEntries)
		}
		clean := l.WrongExpiries == 0 && l.Lapsed == 0 && l.Errors == 0 && l.RaftEntries != nil && *l.RaftEntries == 0
		add(name, status(l.Rate >= 1.5*e.Rate && clean), fmt.Sprintf("lockd %.0f/s, etcd %.0f/s: %.2fx; lockd %d wrong expiries, %d lapsed, %d errors, %s writes",
			l.Rate, e.Rate, l.Rate/e.Rate, l.WrongExpiries, l.Lapsed, l.Errors, writes))
	}
}

// FailoverTarget names the failover target.
const FailoverTarget = "failover after kill -9 of the leader, each system at its default settings: " +
	"p50, with a session made before the kill, no more than the better of etcd's and ZooKeeper's, with no failed trial"

// failoverTarget compares lockd's median failover time with the better
// peer's, each timed with a session made before the kill (ZooKeeper's
// new-session column is reported beside it, not judged).
func (rep *Report) failoverTarget() {
	p50 := func(f *Failover) (time.Duration, bool) {
		if f == nil {
			return 0, false
		}
		_, p, _, ok := f.Kill.Stats()
		return p, ok
	}
	l := rep.failover(Lockd)
	lp, lok := p50(l)
	var best string
	var bp time.Duration
	var peers []string
	for _, s := range Systems[1:] {
		f := rep.failover(s)
		p, ok := p50(f)
		if !ok {
			continue
		}
		peer := fmt.Sprintf("%s %.0f ms", Title(s), msOf(p))
		if f.NewSession != nil {
			if _, np, _, ok := f.NewSession.Stats(); ok {
				peer += fmt.Sprintf(" (with a new session per try %.0f ms)", msOf(np))
			}
		}
		peers = append(peers, peer)
		if best == "" || p < bp {
			best, bp = s, p
		}
	}
	if !lok || best == "" {
		rep.Targets = append(rep.Targets, Target{Name: FailoverTarget, Status: Unmeasured,
			Detail: "no successful failover trial for lockd and a peer"})
		return
	}
	detail := fmt.Sprintf("p50: lockd %.0f ms, %s; better peer %s", msOf(lp), strings.Join(peers, ", "), Title(best))
	if l.Kill.Failed > 0 {
		detail += fmt.Sprintf("; lockd: %d of %d trials took no lock in time", l.Kill.Failed, l.Trials)
	}
	status := NotMet
	if lp <= bp && l.Kill.Failed == 0 {
		status = Met
	}
	rep.Targets = append(rep.Targets, Target{Name: FailoverTarget, Status: status, Detail: detail})
}

// keys are the row sizes of a bench that any system ran, in order.
func (rep *Report) keys(bench string) []int {
	var ns []int
	for _, l := range rep.Lines {
		if l.Bench == bench && !slices.Contains(ns, l.N) {
			ns = append(ns, l.N)
		}
	}
	return ns
}

// Title is how the report names a system.
func Title(system string) string {
	if system == ZooKeeper {
		return "ZooKeeper"
	}
	return system
}

func rowName(l Line) string {
	switch l.Bench {
	case "locks":
		return fmt.Sprintf("locks, %d workers", l.N)
	case "handoff":
		return fmt.Sprintf("handoff, %d waiters", l.N)
	case failoverBench:
		return fmt.Sprintf("failover (kill -9 of the leader), %d trials", l.N)
	case "kv-put", "kv-get", "kv-txn":
		return fmt.Sprintf("%s, %d workers", l.Bench, l.N)
	case "kv-cas":
		return fmt.Sprintf("kv-cas, %d workers", l.N)
	case "kv-watch":
		return fmt.Sprintf("kv-watch, %d watchers", l.N)
	case "keepalive-batch":
		return fmt.Sprintf("keepalive-batch (several sessions a request), %d sessions", l.N)
	}
	return fmt.Sprintf("keepalive, %d sessions", l.N)
}

// cell shows one value of a line.
func (l Line) cell(system string) string {
	v, ok := l.Values[system]
	switch {
	case ok && strings.HasSuffix(l.Metric, " ms"):
		return fmt.Sprintf("%.2f", v)
	case ok:
		return fmt.Sprintf("%.0f", v)
	case slices.Contains(l.NotApplicable, system):
		return "n/a"
	}
	return "-"
}

func (l Line) ratio(peer string) string {
	if r, ok := l.Ratios[peer]; ok && !math.IsInf(r, 0) {
		return fmt.Sprintf("%.2fx", r)
	}
	return ""
}

// better shows lockd's value over the better peer's, and which it is.
func (l Line) better() string {
	if l.Better == "" || math.IsInf(l.BetterRatio, 0) {
		return ""
	}
	return fmt.Sprintf("%.2fx (%s)", l.BetterRatio, Title(l.Better))
}

// table returns the header and cells of every line; a row's name is
// shown on its first line only.
func (rep Report) table() [][]string {
	head := []string{"row", "metric"}
	for _, s := range Systems {
		head = append(head, Title(s))
	}
	for _, s := range Systems[1:] {
		head = append(head, "lockd/"+Title(s))
	}
	head = append(head, "lockd/better peer")
	out := [][]string{head}
	last := ""
	for _, l := range rep.Lines {
		name := rowName(l)
		shown := name
		if name == last {
			shown = ""
		}
		last = name
		cells := []string{shown, l.Metric}
		for _, s := range Systems {
			cells = append(cells, l.cell(s))
		}
		for _, s := range Systems[1:] {
			cells = append(cells, l.ratio(s))
		}
		cells = append(cells, l.better())
		out = append(out, cells)
	}
	return out
}

// Print writes the table, the notes and the targets as plain text, and
// then the etcd-API rows' (without the other rows' if only they ran).
func (rep Report) Print(w io.Writer) {
	if rep.hasMain() {
		rep.printMain(w)
	}
	if rep.EtcdAPI != nil {
		rep.EtcdAPI.Print(w)
	}
}

func (rep Report) printMain(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, cells := range rep.table() {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "ratios are lockd's value over the peer's: above 1 is better for rates, below 1 for latencies; "+BetterHow)
	if rep.hasFailover() {
		fmt.Fprintln(w, "failover: "+FailoverHow)
	}
	for _, n := range rep.notes() {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w, "targets:")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  [%s] %s: %s\n", t.Status, t.Name, t.Detail)
	}
}

// notes are what the table cannot show: rows that do not apply, runs
// that stopped, first errors, systems that did not run.
func (rep Report) notes() []string {
	var notes []string
	for _, s := range Systems {
		i := slices.IndexFunc(rep.Results, func(r Result) bool { return r.System == s })
		if i < 0 {
			notes = append(notes, fmt.Sprintf("%s: not run", Title(s)))
			continue
		}
		r := rep.Results[i]
		if len(r.Endpoints) > 0 {
			where := "a follower"
			switch r.Leader {
			case "":
				where = "a member not known to lead or follow"
			case r.Endpoints[0]:
				where = "the leader"
			}
			notes = append(notes, fmt.Sprintf("%s: the 1-worker row's session was on %s (%s); the leader at the start was %s",
				Title(s), where, r.Endpoints[0], orDash(r.Leader)))
		}
		for _, b := range Benches {
			if why, ok := r.NotApplicable[b]; ok {
				notes = append(notes, fmt.Sprintf("%s, %s: not applicable: %s", Title(s), b, why))
			}
		}
		for _, row := range r.Rows {
			if row.FirstError != "" && !isAPIBench(row.Bench) {
				notes = append(notes, fmt.Sprintf("%s, %s %d: %d errors, the first: %s", Title(s), row.Bench, row.N, row.Errors, row.FirstError))
			}
		}
		if f := r.Failover; f != nil {
			if len(f.Killed) > 0 {
				notes = append(notes, fmt.Sprintf("%s, failover: the leaders killed, trial by trial: %s", Title(s), strings.Join(f.Killed, ", ")))
			}
			if f.Kill.Failed > 0 {
				notes = append(notes, fmt.Sprintf("%s, failover: %d of %d trials took no lock within %v", Title(s), f.Kill.Failed, f.Trials, giveUp))
			}
			if f.NewSession != nil {
				notes = append(notes, fmt.Sprintf("%s, failover: %s", Title(s), ZooKeeperFailoverColumns))
			}
		}
		if r.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: the run stopped: %s", Title(s), r.Error))
		}
	}
	return notes
}

// Markdown writes the report as a block for BENCHMARKS.md, and the
// etcd-API rows' as a block of their own (without the other rows' if only
// they ran).
func (rep Report) Markdown(w io.Writer) {
	if rep.hasMain() {
		rep.markdownMain(w)
	}
	if rep.EtcdAPI != nil {
		if rep.hasMain() {
			fmt.Fprintln(w)
		}
		rep.EtcdAPI.Markdown(w, rep)
	}
}

// markdownHead writes a section's heading, titled title, and the run's
// date, machine, commit and command.
func (rep Report) markdownHead(w io.Writer, title string) {
	commit := ""
	if rep.Commit != "" {
		commit = ", commit " + rep.Commit
	}
	fmt.Fprintf(w, "## %s%s: %s\n\n", rep.Date.Format("2006-01-02"), commit, title)
	fmt.Fprintf(w, "- **Date:** %s\n", rep.Date.Format(time.RFC3339))
	fmt.Fprintf(w, "- **Machine:** %s; %d CPUs (nproc)\n", rep.Machine, rep.Cores)
	if rep.Commit != "" {
		fmt.Fprintf(w, "- **Commit:** `%s`\n", rep.Commit)
	}
	if rep.Command != "" {
		fmt.Fprintf(w, "- **Command:** `%s`\n", rep.Command)
	}
}

func (rep Report) markdownMain(w io.Writer) {
	rep.markdownHead(w, "lockd, etcd and ZooKeeper side by side")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "- **%s:** %s; endpoints %s; warm-up %.0f s\n", Title(r.System), orDash(r.Version), strings.Join(r.Endpoints, ", "), r.Warmup)
	}
	if len(rep.Results) > 0 {
		order := slices.Clone(rep.Results)
		slices.SortStableFunc(order, func(a, b Result) int { return a.Started.Compare(b.Started) })
		names := make([]string, len(order))
		for i, r := range order {
			names[i] = Title(r.System)
		}
		fmt.Fprintf(w, "- **Order:** %s, one at a time: each cluster ran only while it was measured\n", strings.Join(names, ", "))
		r := rep.Results[0]
		rows := fmt.Sprintf("- **Rows:** each measured for %s", rowSeconds(rep))
		if rep.ran("keepalive") {
			rows += fmt.Sprintf("; keepalive sessions with a %.0f s TTL renewed by %d callers", r.TTL, r.Callers)
		}
		fmt.Fprintln(w, rows)
	}
	if rep.hasFailover() {
		var names, parts []string
		for _, r := range rep.Results {
			if f := r.Failover; f != nil {
				names = append(names, Title(r.System))
				parts = append(parts, fmt.Sprintf("%d trials, %d background workers, %g s settle", f.Trials, f.Workers, f.Settle))
			}
		}
		if len(slices.Compact(slices.Clone(parts))) == 1 {
			fmt.Fprintf(w, "- **Failover:** %s: %s each\n", strings.Join(names, ", "), parts[0])
		} else {
			for i := range parts {
				parts[i] = names[i] + " " + parts[i]
			}
			fmt.Fprintf(w, "- **Failover:** %s\n", strings.Join(parts, "; "))
		}
	}
	fmt.Fprintln(w)
	for i, cells := range rep.table() {
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
		if i == 0 {
			fmt.Fprintln(w, strings.Repeat("|---", len(cells))+"|")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Ratios are lockd's value over the peer's: above 1 is better for rates, below 1 for latencies; "+BetterHow+".")
	if rep.CommitLatencyMs != nil {
		fmt.Fprintf(w, "Commit latency (for the hand-off target): %.2f ms, %s.\n", *rep.CommitLatencyMs, CommitLatencyHow)
	} else {
		fmt.Fprintln(w, "Commit latency (for the hand-off target): unmeasured.")
	}
	if rep.hasFailover() {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Failover: %s\n", FailoverHow)
	}
	if notes := rep.notes(); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | status | measured |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Status, t.Detail)
	}
}

func (rep Report) hasFailover() bool {
	return slices.ContainsFunc(rep.Results, func(r Result) bool { return r.Failover != nil })
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rowSeconds is the rows' measured time, as the results say.
func rowSeconds(rep Report) string {
	var secs []float64
	for _, r := range rep.Results {
		for _, row := range r.Rows {
			if !slices.Contains(secs, row.Seconds) {
				secs = append(secs, row.Seconds)
			}
		}
	}
	parts := make([]string, len(secs))
	for i, s := range secs {
		parts[i] = fmt.Sprintf("%g s", s)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// WriteJSON writes v, indented, to path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// ReadResult reads a Result that `lockd-compare run` wrote.
func ReadResult(path string) (Result, error) {
	var r Result
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
