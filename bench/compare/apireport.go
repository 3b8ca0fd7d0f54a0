package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// APIReport compares lockd's nodes serving etcd's v3 API (lockd-etcd)
// with etcd on the etcd-API rows, which the same clientv3 code ran
// against both.
type APIReport struct {
	// Systems are etcd's and lockd-etcd's results without their rows,
	// for their versions, endpoints, leaders and errors.
	Systems []Result `json:"systems"`
	// Settings are the rows' settings (of lockd-etcd's run, or else
	// etcd's).
	Settings *APIOptions `json:"settings,omitempty"`
	Lines    []APILine   `json:"lines"`
	Targets  []Target    `json:"targets"`
}

// APILine is one etcd-API row on both systems.
type APILine struct {
	Bench     string    `json:"bench"`
	N         int       `json:"n"`
	Etcd      *load.Row `json:"etcd,omitempty"`
	LockdEtcd *load.Row `json:"lockd_etcd,omitempty"`
	// lockd-etcd's rate, p50 and p99 over etcd's, where both ran (a rate
	// ratio above 1 and a latency ratio below 1 favour lockd-etcd); 0
	// where etcd's is 0 (a row in which etcd completed nothing).
	RateRatio float64 `json:"rate_ratio,omitempty"`
	P50Ratio  float64 `json:"p50_ratio,omitempty"`
	P99Ratio  float64 `json:"p99_ratio,omitempty"`
}

// The targets of the etcd-API rows.
const (
	APINoWorseTarget = "no row worse than etcd: every row's rate at least etcd's"
	APIMutexTarget   = "Mutex Lock+Unlock cycles/s at %d workers: at least 1.5x etcd's"
	APILeaseTarget   = "KeepAliveOnce renewals/s over %d leases (%d callers): at least 1.5x etcd's, with 0 lapsed, 0 wrong expiries, 0 errors"
)

func isAPIBench(bench string) bool { return slices.Contains(APIRowBenches, bench) }

// newAPIReport compares the etcd-API rows of results, or returns nil if
// none has any.
func newAPIReport(results []Result) *APIReport {
	rep := &APIReport{}
	rows := map[string]map[rowKey]load.Row{}
	var keys []rowKey
	for _, name := range []string{Etcd, LockdEtcd} {
		for _, r := range results {
			if r.System != name {
				continue
			}
			if rows[name] == nil {
				rows[name] = map[rowKey]load.Row{}
			}
			has := r.API != nil
			for _, row := range r.Rows {
				if !isAPIBench(row.Bench) {
					continue
				}
				has = true
				k := rowKey{row.Bench, row.N}
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
				rows[name][k] = row
			}
			if !has {
				continue
			}
			sys := r
			sys.Rows = nil
			rep.Systems = append(rep.Systems, sys)
			if r.API != nil && (rep.Settings == nil || name == LockdEtcd) {
				rep.Settings = r.API
			}
		}
	}
	if len(rep.Systems) == 0 {
		return nil
	}
	slices.SortStableFunc(keys, func(a, b rowKey) int {
		if c := slices.Index(APIRowBenches, a.bench) - slices.Index(APIRowBenches, b.bench); c != 0 {
			return c
		}
		return a.n - b.n
	})
	for _, k := range keys {
		l := APILine{Bench: k.bench, N: k.n}
		if r, ok := rows[Etcd][k]; ok {
			l.Etcd = &r
		}
		if r, ok := rows[LockdEtcd][k]; ok {
			l.LockdEtcd = &r
		}
		if e, m := l.Etcd, l.LockdEtcd; e != nil && m != nil {
			l.RateRatio = ratio(m.Rate, e.Rate)
			l.P50Ratio = ratio(float64(m.Latency.P50), float64(e.Latency.P50))
			l.P99Ratio = ratio(float64(m.Latency.P99), float64(e.Latency.P99))
		}
		rep.Lines = append(rep.Lines, l)
	}
	rep.targets()
	return rep
}

// ratio is a/b, or 0 if b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// both says whether the line has both systems' rows.
func (l APILine) both() bool { return l.Etcd != nil && l.LockdEtcd != nil }

// atLeast says whether lockd-etcd's rate is at least k times etcd's (and
// above 0).
func (l APILine) atLeast(k float64) bool {
	return l.both() && l.LockdEtcd.Rate > 0 && l.LockdEtcd.Rate >= k*l.Etcd.Rate
}

// vs is lockd-etcd's rate against etcd's: the ratio, or what stands for
// it where etcd's rate is 0.
func (l APILine) vs() string {
	switch {
	case !l.both():
		return ""
	case l.Etcd.Rate > 0:
		return fmt.Sprintf("%.2fx", l.RateRatio)
	case l.LockdEtcd.Rate > 0:
		return "etcd completed none"
	}
	return "neither completed any"
}

func (rep *APIReport) targets() {
	add := func(name, status, detail string) {
		rep.Targets = append(rep.Targets, Target{Name: name, Status: status, Detail: detail})
	}
	var worse, all []string
	lowest := -1
	for i, l := range rep.Lines {
		if !l.both() {
			continue
		}
		all = append(all, apiRowName(l.Bench, l.N))
		if !l.atLeast(1) {
			worse = append(worse, fmt.Sprintf("%s %s", apiRowName(l.Bench, l.N), l.vs()))
		}
		if l.Etcd.Rate > 0 && (lowest < 0 || l.RateRatio < rep.Lines[lowest].RateRatio) {
			lowest = i
		}
	}
	switch {
	case len(all) == 0:
		add(APINoWorseTarget, Unmeasured, "no row ran on both etcd and lockd-etcd")
	case len(worse) > 0:
		add(APINoWorseTarget, NotMet, fmt.Sprintf("%d of %d rows below etcd's rate: %s", len(worse), len(all), strings.Join(worse, "; ")))
	case lowest < 0:
		add(APINoWorseTarget, Met, fmt.Sprintf("%d rows; etcd completed none in any", len(all)))
	default:
		lo := rep.Lines[lowest]
		add(APINoWorseTarget, Met, fmt.Sprintf("%d rows; the lowest ratio %.2fx (%s)", len(all), lo.RateRatio, apiRowName(lo.Bench, lo.N)))
	}

	status := func(ok bool) string {
		if ok {
			return Met
		}
		return NotMet
	}
	mutexes, leases := 0, 0
	for _, l := range rep.Lines {
		switch l.Bench {
		case APIMutex:
			mutexes++
			name := fmt.Sprintf(APIMutexTarget, l.N)
			if !l.both() {
				add(name, Unmeasured, "not run on both etcd and lockd-etcd")
				continue
			}
			add(name, status(l.atLeast(1.5)), fmt.Sprintf("lockd-etcd %.0f/s, etcd %.0f/s: %s", l.LockdEtcd.Rate, l.Etcd.Rate, l.vs()))
		case APILease:
			leases++
			callers := 0
			for _, s := range rep.Systems {
				if s.System == LockdEtcd {
					callers = s.Callers
				}
			}
			name := fmt.Sprintf(APILeaseTarget, l.N, callers)
			if !l.both() {
				add(name, Unmeasured, "not run on both etcd and lockd-etcd")
				continue
			}
			m := l.LockdEtcd
			clean := m.Lapsed == 0 && m.WrongExpiries == 0 && m.Errors == 0
			add(name, status(l.atLeast(1.5) && clean), fmt.Sprintf("lockd-etcd %.0f/s, etcd %.0f/s: %s; lockd-etcd %d lapsed, %d wrong expiries, %d errors",
				m.Rate, l.Etcd.Rate, l.vs(), m.Lapsed, m.WrongExpiries, m.Errors))
		}
	}
	if mutexes == 0 {
		add(strings.Replace(APIMutexTarget, "%d", "each count of", 1), Unmeasured, "no mutex rows")
	}
	if leases == 0 {
		add("KeepAliveOnce renewals/s: at least 1.5x etcd's", Unmeasured, "no lease-keepalive rows")
	}
}

// apiRowName names an etcd-API row, with the unit its rate counts.
func apiRowName(bench string, n int) string {
	switch bench {
	case APIMutex:
		return fmt.Sprintf("Mutex Lock+Unlock, %d workers (cycles/s)", n)
	case APIPut:
		return fmt.Sprintf("Put, %d workers (puts/s)", n)
	case APIRange:
		return fmt.Sprintf("Range, %d workers (ranges/s)", n)
	case APIWatch:
		return fmt.Sprintf("watch fan-out, %d watchers (puts/s seen by all)", n)
	case APILease:
		return fmt.Sprintf("KeepAliveOnce, %d leases (renewals/s)", n)
	}
	return fmt.Sprintf("%s, %d", bench, n)
}

func rateCell(r *load.Row) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.Rate)
}

func msCell(r *load.Row, d func(load.Latency) time.Duration) string {
	if r == nil || r.Ops == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", msOf(d(r.Latency)))
}

func ratioCell(v float64) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.2fx", v)
}

func pairCell(e, m *load.Row, f func(load.Row) string) string {
	cell := func(r *load.Row) string {
		if r == nil {
			return "-"
		}
		return f(*r)
	}
	return cell(e) + " / " + cell(m)
}

// table returns the header and cells of every line.
func (rep *APIReport) table() [][]string {
	p50 := func(l load.Latency) time.Duration { return l.P50 }
	p99 := func(l load.Latency) time.Duration { return l.P99 }
	out := [][]string{{"row", "etcd", "lockd-etcd", "lockd-etcd/etcd",
		"p50 ms etcd", "p50 ms lockd-etcd", "p50 ratio", "p99 ms etcd", "p99 ms lockd-etcd", "p99 ratio",
		"errors etcd / lockd-etcd", "setup s etcd / lockd-etcd"}}
	for _, l := range rep.Lines {
		out = append(out, []string{apiRowName(l.Bench, l.N), rateCell(l.Etcd), rateCell(l.LockdEtcd), l.vs(),
			msCell(l.Etcd, p50), msCell(l.LockdEtcd, p50), ratioCell(l.P50Ratio),
			msCell(l.Etcd, p99), msCell(l.LockdEtcd, p99), ratioCell(l.P99Ratio),
			pairCell(l.Etcd, l.LockdEtcd, func(r load.Row) string { return fmt.Sprint(r.Errors) }),
			pairCell(l.Etcd, l.LockdEtcd, func(r load.Row) string { return fmt.Sprintf("%.1f", r.Setup) })})
	}
	return out
}

// APIRatioHow says how to read the ratios.
const APIRatioHow = "lockd-etcd/etcd is lockd-etcd's value over etcd's: above 1 is better for rates, below 1 for latencies"

// notes are what the table cannot show: the leases' lapses, wrong
// expiries and writes, the time to grant them, first errors, runs that
// stopped.
func (rep *APIReport) notes() []string {
	var notes []string
	for _, s := range rep.Systems {
		order := s.Endpoints
		if s.API != nil && len(s.API.Order) > 0 {
			order = s.API.Order
		}
		if len(order) > 0 {
			where := "a follower"
			switch s.Leader {
			case "":
				where = "a member not known to lead or follow"
			case order[0]:
				where = "the leader"
			}
			notes = append(notes, fmt.Sprintf("%s: endpoints in the order %s: the 1-worker row and the watch rows' writer talk to %s; the leader at the start was %s",
				s.System, strings.Join(order, ", "), where, orDash(s.Leader)))
		}
	}
	for _, l := range rep.Lines {
		if l.Bench == APILease {
			var parts []string
			for _, side := range []struct {
				name string
				r    *load.Row
			}{{Etcd, l.Etcd}, {LockdEtcd, l.LockdEtcd}} {
				if side.r == nil {
					continue
				}
				r := side.r
				writes := "unknown"
				if r.RaftEntries != nil {
					writes = fmt.Sprint(*r.RaftEntries)
				}
				parts = append(parts, fmt.Sprintf("%s granted them in %.1f s (%.0f/s), then %d lapsed, %d wrong expiries, %s Raft entries while only renewals ran",
					side.name, r.Setup, float64(l.N)/max(r.Setup, 1e-9), r.Lapsed, r.WrongExpiries, writes))
			}
			notes = append(notes, fmt.Sprintf("%s: %s", apiRowName(l.Bench, l.N), strings.Join(parts, "; ")))
		}
		for _, side := range []struct {
			name string
			r    *load.Row
		}{{Etcd, l.Etcd}, {LockdEtcd, l.LockdEtcd}} {
			if side.r != nil && side.r.FirstError != "" {
				notes = append(notes, fmt.Sprintf("%s, %s: %d errors, the first: %s", side.name, apiRowName(l.Bench, l.N), side.r.Errors, side.r.FirstError))
			}
		}
	}
	for _, s := range rep.Systems {
		if s.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: the run stopped: %s", s.System, s.Error))
		}
	}
	return notes
}

// settings describes how the rows ran.
func (rep *APIReport) settings(rowSecs string) string {
	s := fmt.Sprintf("each measured for %s", rowSecs)
	var callers int
	var ttl float64
	for _, r := range rep.Systems {
		if r.System == LockdEtcd || callers == 0 {
			callers, ttl = r.Callers, r.TTL
		}
	}
	if o := rep.Settings; o != nil {
		s += fmt.Sprintf("; leases with a %.0f s TTL granted by %d callers at most %.0f a second (within %v) and renewed by the same %d callers",
			ttl, callers, o.GrantRate, o.GrantLimit, callers)
	}
	return s
}

// Print writes the table, the notes and the targets as plain text.
func (rep *APIReport) Print(w io.Writer) {
	fmt.Fprintln(w, "etcd's v3 API: lockd-etcd (lockd's nodes, --etcd-listen) and etcd through the same clientv3 code")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, cells := range rep.table() {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, APIRatioHow)
	for _, n := range rep.notes() {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w, "targets:")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  [%s] %s: %s\n", t.Status, t.Name, t.Detail)
	}
}

// Markdown writes the comparison as a block for BENCHMARKS.md.
func (rep *APIReport) Markdown(w io.Writer, parent Report) {
	parent.markdownHead(w, "etcd's v3 API, lockd and etcd through the same clientv3 code")
	for _, r := range rep.Systems {
		fmt.Fprintf(w, "- **%s:** %s; endpoints %s; warm-up %.0f s\n", r.System, orDash(r.Version), strings.Join(r.Endpoints, ", "), r.Warmup)
	}
	order := slices.Clone(rep.Systems)
	slices.SortStableFunc(order, func(a, b Result) int { return a.Started.Compare(b.Started) })
	names := make([]string, len(order))
	for i, r := range order {
		names[i] = r.System
	}
	fmt.Fprintf(w, "- **Order:** %s, one at a time: each cluster ran only while it was measured\n", strings.Join(names, ", "))
	var secs []float64
	for _, l := range rep.Lines {
		for _, r := range []*load.Row{l.Etcd, l.LockdEtcd} {
			if r != nil && !slices.Contains(secs, r.Seconds) {
				secs = append(secs, r.Seconds)
			}
		}
	}
	parts := make([]string, len(secs))
	for i, s := range secs {
		parts[i] = fmt.Sprintf("%g s", s)
	}
	fmt.Fprintf(w, "- **Rows:** %s\n\n", rep.settings(orDash(strings.Join(parts, ", "))))
	for i, cells := range rep.table() {
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
		if i == 0 {
			fmt.Fprintln(w, strings.Repeat("|---", len(cells))+"|")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, APIRatioHow+".")
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
