package elections

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// tableNote explains the table's columns; WriteTable prints it below.
const tableNote = `messages: election messages sent until agreement (ring/bully/invitation: heartbeats apart, in "hb";
  raft: RPCs sent, failed ones included, plus their replies; empty AppendEntries are raft's heartbeats).
time: from the start of the election to agreement (classic: every living node agrees, virtual time;
  raft: the new leader's first Apply commits, wall time). detect: raft's leader crash to its first (pre)vote.
random: median over the runs, [min..max] beside it; each kind's median is taken on its own.
`

// WriteTable prints rows as a Markdown table with aligned columns, and a
// note on what the columns mean.
func WriteTable(w io.Writer, rows []Row) error {
	head := []string{"algorithm", "N", "scenario", "runs", "messages", "msg range", "hb", "time", "time range", "detect", "by type"}
	right := []bool{false, true, false, true, true, true, true, true, true, true, false}
	cells := [][]string{head}
	for _, r := range rows {
		cells = append(cells, []string{
			string(r.Algorithm), strconv.Itoa(r.N), string(r.Scenario), strconv.Itoa(r.Runs),
			strconv.FormatUint(r.Messages, 10), msgRange(r), hb(r),
			ms(r.Time), timeRange(r), detect(r), byType(r),
		})
	}
	width := make([]int, len(head))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len(c), 3)
		}
	}
	var b strings.Builder
	line := func(row []string) {
		b.WriteString("|")
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len(c))
			if right[i] {
				c = pad + c
			} else {
				c += pad
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(cells[0])
	rule := make([]string, len(head))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
		if right[i] {
			rule[i] = rule[i][1:] + ":"
		}
	}
	line(rule)
	for _, row := range cells[1:] {
		line(row)
	}
	b.WriteString("\n" + tableNote)
	_, err := io.WriteString(w, b.String())
	return err
}

func msgRange(r Row) string {
	if r.Runs < 2 {
		return "-"
	}
	return fmt.Sprintf("[%d..%d]", r.MessagesMin, r.MessagesMax)
}

func timeRange(r Row) string {
	if r.Runs < 2 {
		return "-"
	}
	return "[" + ms(r.TimeMin) + ".." + ms(r.TimeMax) + "]"
}

func hb(r Row) string {
	if r.Algorithm == Raft {
		return "-"
	}
	return strconv.FormatUint(r.Heartbeats, 10)
}

func detect(r Row) string {
	if r.Algorithm != Raft {
		return "-"
	}
	return ms(r.Detect)
}

// byType lists the kinds with a count, in column order: "election=3
// answer=1".
func byType(r Row) string {
	var parts []string
	for _, k := range kindsOf(r.Algorithm) {
		if c := r.Kinds[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, c))
		}
	}
	return strings.Join(parts, " ")
}

// ms formats d in milliseconds with one decimal: "102.0ms".
func ms(d time.Duration) string { return msNum(d) + "ms" }

func msNum(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// WriteCSV writes rows as CSV with a header line: the table's figures
// with times in milliseconds (three decimals), and one column per
// message kind of the algorithms present (0 where a kind does not apply).
// detect_ms is empty for the classic algorithms.
func WriteCSV(w io.Writer, rows []Row) error {
	var algs []Algorithm
	for _, r := range rows {
		if len(algs) == 0 || algs[len(algs)-1] != r.Algorithm {
			algs = append(algs, r.Algorithm)
		}
	}
	kinds := allKinds(algs)
	cw := csv.NewWriter(w)
	head := []string{"algorithm", "n", "scenario", "runs", "clock", "messages", "messages_min", "messages_max",
		"heartbeats", "time_ms", "time_min_ms", "time_max_ms", "detect_ms"}
	if err := cw.Write(append(head, kinds...)); err != nil {
		return err
	}
	for _, r := range rows {
		d := ""
		if r.Algorithm == Raft {
			d = csvMs(r.Detect)
		}
		rec := []string{string(r.Algorithm), strconv.Itoa(r.N), string(r.Scenario), strconv.Itoa(r.Runs), string(r.Clock),
			u(r.Messages), u(r.MessagesMin), u(r.MessagesMax), u(r.Heartbeats),
			csvMs(r.Time), csvMs(r.TimeMin), csvMs(r.TimeMax), d}
		for _, k := range kinds {
			rec = append(rec, u(r.Kinds[k]))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

func csvMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}
