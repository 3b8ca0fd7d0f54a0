package load

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// Report is what `lockd-bench` writes as JSON: when, against what, and
// the rows.
type Report struct {
	Date      time.Time `json:"date"`
	Endpoints []string  `json:"endpoints"`
	Command   string    `json:"command,omitempty"`
	Rows      []Row     `json:"rows"`
}

// Print writes rows as an aligned table.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bench\tn\tops\tper s\tp50\tp99\tmax\terrors\tlapsed\twrong expiries\traft entries\tsetup\tparked\trefused\tdrain\tcas failed\t")
	for _, r := range rows {
		only := func(bench string, s string) string {
			if r.Bench != bench {
				return "-"
			}
			return s
		}
		keep := func(s string) string { return orOnly(r.Bench, "keepalive", "keepalive-batch", s) }
		parked := "-"
		if r.Bench == "waiters" || r.Bench == "watchers" || r.Bench == "kv-watch" || r.Bench == "kv-wake" {
			parked = fmt.Sprint(r.Parked)
		}
		entries := "?"
		if r.RaftEntries != nil {
			entries = fmt.Sprint(*r.RaftEntries)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d %s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\t%s\t%s\t%s\t%s\t\n",
			r.Bench, r.N, r.Ops, r.Unit(), r.Rate, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), r.Errors,
			keep(fmt.Sprint(r.Lapsed)), keep(fmt.Sprint(r.WrongExpiries)), keep(entries), r.Setup,
			parked, orOnly(r.Bench, "watchers", "kv-wake", fmt.Sprint(r.Refused)), only("waiters", fmt.Sprintf("%.1fs", r.Drain)),
			only("kv-cas", fmt.Sprintf("%d on %d keys", r.CASFailed, r.Keys)))
	}
	tw.Flush()
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s %d: first error: %s\n", r.Bench, r.N, r.FirstError)
		}
	}
	printKVScale(w, rows)
}

func orOnly(bench, a, b, s string) string {
	if bench != a && bench != b {
		return "-"
	}
	return s
}

// printKVScale writes what the kv-scale rows carry beyond the table: the
// memory of the nodes, the ratio of the wake-ups, the snapshots.
func printKVScale(w io.Writer, rows []Row) {
	const mib = 1 << 20
	var base *Row
	for i, r := range rows {
		switch {
		case r.Bench == "kv-load":
			fmt.Fprintf(w, "kv-load: %d keys, %d puts to a transaction, in %.1fs (%.0f keys/s); heap per key, median of the nodes: %.0f bytes\n",
				r.Ops, r.Batch, r.Seconds, r.Rate, r.BytesPerKey)
			for _, m := range r.Memory {
				how := "heap in use, /metrics"
				if m.AfterGC {
					how = "live heap after a GC"
				}
				fmt.Fprintf(w, "  %s (%s, then RSS): before %.1f MiB, loaded %.1f, after %d more puts %.1f (%.0f bytes/key)",
					m.Endpoint, how, float64(m.HeapBefore)/mib, float64(m.HeapLoaded)/mib, logCacheTurnover, float64(m.HeapAfter)/mib, m.BytesPerKey)
				if m.HeapWatching > 0 {
					fmt.Fprintf(w, ", watchers held %.1f", float64(m.HeapWatching)/mib)
				}
				if m.HeapEnd > 0 {
					fmt.Fprintf(w, ", end %.1f", float64(m.HeapEnd)/mib)
				}
				fmt.Fprintf(w, "; RSS %.1f, %.1f, %.1f", float64(m.RSSBefore)/mib, float64(m.RSSLoaded)/mib, float64(m.RSSAfter)/mib)
				if m.RSSWatching > 0 {
					fmt.Fprintf(w, ", %.1f", float64(m.RSSWatching)/mib)
				}
				if m.RSSEnd > 0 {
					fmt.Fprintf(w, ", %.1f", float64(m.RSSEnd)/mib)
				}
				fmt.Fprintln(w, " MiB")
			}
		case r.Bench == "kv-wake" && r.N == 0 && base == nil:
			base = &rows[i]
		case r.Bench == "kv-wake":
			if base != nil && base.Latency.P50 > 0 {
				fmt.Fprintf(w, "kv-wake: put to wake-up p50 %s with %d unrelated watchers, %s with 0: ratio %.2f; %d unrelated watchers woken\n",
					ms(r.Latency.P50), r.N, ms(base.Latency.P50), float64(r.Latency.P50)/float64(base.Latency.P50), r.Woken)
			}
		case len(r.Snapshots) > 0:
			fmt.Fprintf(w, "snapshots seen during the puts:\n")
			for _, sn := range r.Snapshots {
				role := "follower"
				if sn.Leader {
					role = "leader"
				}
				fmt.Fprintf(w, "  %s (%s): %d taking %.2fs each, %.1f MiB, within %.1fs..%.1fs of the row\n",
					sn.Endpoint, role, sn.Count, sn.Seconds, float64(sn.Bytes)/mib, sn.From, sn.To)
			}
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// WriteJSON writes the report to path.
func WriteJSON(path string, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
