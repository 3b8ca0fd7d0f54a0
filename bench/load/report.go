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
		keep := func(s string) string { return only("keepalive", s) }
		parked := "-"
		if r.Bench == "waiters" || r.Bench == "watchers" || r.Bench == "kv-watch" {
			parked = fmt.Sprint(r.Parked)
		}
		entries := "?"
		if r.RaftEntries != nil {
			entries = fmt.Sprint(*r.RaftEntries)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d %s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\t%s\t%s\t%s\t%s\t\n",
			r.Bench, r.N, r.Ops, r.Unit(), r.Rate, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), r.Errors,
			keep(fmt.Sprint(r.Lapsed)), keep(fmt.Sprint(r.WrongExpiries)), keep(entries), r.Setup,
			parked, only("watchers", fmt.Sprint(r.Refused)), only("waiters", fmt.Sprintf("%.1fs", r.Drain)),
			only("kv-cas", fmt.Sprintf("%d on %d keys", r.CASFailed, r.Keys)))
	}
	tw.Flush()
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s %d: first error: %s\n", r.Bench, r.N, r.FirstError)
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
