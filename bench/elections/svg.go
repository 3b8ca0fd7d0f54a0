package elections

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// The chart's geometry, in SVG user units (pixels).
const (
	panelW, panelH   = 460, 280
	padL, padR       = 60, 20
	padT, padB       = 36, 44
	chartTop         = 64 // title and legend above the panels
	gridLines        = 5
	markerRadius     = 3.5
	svgFont          = "font-family=\"sans-serif\""
	panelGap         = 10
	legendItemW      = 110
	legendSwatchSize = 12
)

// seriesColor gives each algorithm its line colour.
var seriesColor = map[Algorithm]string{
	Ring: "#1f77b4", Bully: "#d62728", Invitation: "#2ca02c", Raft: "#9467bd",
}

// metric is what one column of panels plots.
type metric struct {
	title string
	value func(Row) float64
}

var metrics = []metric{
	{"election messages", func(r Row) float64 { return float64(r.Messages) }},
	{"time to agreement (ms)", func(r Row) float64 { return float64(r.Time) / float64(time.Millisecond) }},
}

// WriteSVG draws rows as a standalone SVG chart: one row of panels per
// scenario, with election messages against N on the left and time to
// agreement against N on the right, one line per algorithm (medians for
// Random). It uses nothing but the standard library.
func WriteSVG(w io.Writer, rows []Row) error {
	var scenarios []Scenario
	var algs []Algorithm
	var ns []int
	for _, r := range rows {
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
		if !slices.Contains(algs, r.Algorithm) {
			algs = append(algs, r.Algorithm)
		}
		if !slices.Contains(ns, r.N) {
			ns = append(ns, r.N)
		}
	}
	slices.Sort(ns)
	width := len(metrics)*(panelW+panelGap) + panelGap
	height := chartTop + len(scenarios)*(panelH+panelGap) + panelGap
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12">`+"\n",
		width, height, width, height, svgFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(&b, panelGap, 22, "start", 16, "lockd-bench elections: messages and time to agreement against cluster size N")
	for i, a := range algs {
		x := panelGap + i*legendItemW
		fmt.Fprintf(&b, `<rect x="%d" y="36" width="%d" height="%d" fill="%s"/>`+"\n", x, legendSwatchSize, legendSwatchSize, seriesColor[a])
		text(&b, x+legendSwatchSize+6, 47, "start", 12, string(a))
	}
	text(&b, panelGap+len(algs)*legendItemW, 47, "start", 11,
		"classic: virtual time; raft: wall time, RPCs + replies")
	for si, sc := range scenarios {
		for mi, m := range metrics {
			x0 := panelGap + mi*(panelW+panelGap)
			y0 := chartTop + si*(panelH+panelGap)
			drawPanel(&b, x0, y0, fmt.Sprintf("%s, %s case", m.title, sc), ns, algs, rows, sc, m)
		}
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// drawPanel draws one panel at (x0, y0): axes, grid, and a line per
// algorithm of m against N for scenario sc.
func drawPanel(b *bytes.Buffer, x0, y0 int, title string, ns []int, algs []Algorithm, rows []Row, sc Scenario, m metric) {
	if sc == Random {
		title += " (median)"
	}
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", panelW, panelH)
	text(b, panelW/2, 20, "middle", 13, title)
	var top float64
	for _, r := range rows {
		if r.Scenario == sc {
			top = max(top, m.value(r))
		}
	}
	top = niceCeil(top)
	plotW, plotH := float64(panelW-padL-padR), float64(panelH-padT-padB)
	xOf := func(n int) float64 {
		if len(ns) < 2 {
			return padL + plotW/2
		}
		return padL + plotW*float64(n-ns[0])/float64(ns[len(ns)-1]-ns[0])
	}
	yOf := func(v float64) float64 { return padT + plotH*(1-v/top) }
	for i := 0; i <= gridLines; i++ {
		v := top * float64(i) / gridLines
		y := yOf(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", padL, y, panelW-padR, y)
		text(b, padL-6, int(y)+4, "end", 11, formatTick(v))
	}
	for _, n := range ns {
		x := xOf(n)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x, panelH-padB, x, panelH-padB+4)
		text(b, int(x), panelH-padB+17, "middle", 11, fmt.Sprint(n))
	}
	text(b, padL+int(plotW)/2, panelH-8, "middle", 11, "N (nodes)")
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", padL, panelH-padB, panelW-padR, panelH-padB)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", padL, padT, padL, panelH-padB)
	for _, a := range algs {
		var pts []string
		var marks bytes.Buffer
		for _, r := range rows {
			if r.Algorithm != a || r.Scenario != sc {
				continue
			}
			x, y := xOf(r.N), yOf(m.value(r))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&marks, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>`, x, y, markerRadius, seriesColor[a])
			_ = xml.EscapeText(&marks, fmt.Appendf(nil, "%s N=%d %s: %s", a, r.N, sc, formatTick(m.value(r))))
			marks.WriteString("</title></circle>\n")
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n",
				seriesColor[a], strings.Join(pts, " "))
		}
		b.Write(marks.Bytes())
	}
	b.WriteString("</g>\n")
}

// text writes an escaped text element.
func text(b *bytes.Buffer, x, y int, anchor string, size int, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d">`, x, y, anchor, size)
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1),
// so that the grid lines fall on round numbers.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 2, 5, 10} {
		if v <= f*p {
			return f * p
		}
	}
	return 10 * p
}

// formatTick prints a value without trailing zeros: "40", "2.5".
func formatTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
