package elections

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/lockd/lockd/classic"
)

// The idle-pool axis: how an election's cost and the load of normal
// operation grow with the cluster size N, for the emergent algorithm with
// a slave pool of S (PoolSizes), against the bully, the ring and Raft.
//
// A classic run (classic.Sim, one-way delays RandomMinDelay to
// RandomMaxDelay drawn from the seed, DefaultTiming, and for emergent
// DefaultPool with Lower = S, Upper = S + 2) starts with nN as the
// coordinator (for emergent, the S highest ranks below it as slaves),
// runs poolWarmup, then counts every message sent during poolSteady:
// the steady-state load, heartbeats only (master heartbeats, and for
// emergent slave heartbeats). Then nN crashes and, at once, one node is
// told of it, the worst place for each algorithm: the lowest-ranked
// process for the bully (which sets off every election above it) and the
// ring (the would-be leader's successor), the lowest slave for emergent
// (the bully's worst case among the slaves). The others' detectors fire
// SuspectTimeout after the last heartbeat if the election has not ended
// by then, and they join it. The election's messages are those of every
// kind but heartbeats until Sim.Settled, and its time runs from the crash
// to agreement (for emergent, the wait for missed master heartbeats
// included). Each figure is the median over Config.Seeds runs. Letting
// every node's detector find the crash instead makes the bully's
// elections restart over and over as N grows (millions of messages at
// N = 64), which the simulator cannot carry to N = 256.
//
// Raft: one leader crash of the Best scenario (all N are voters), for N
// up to MaxRaftPoolN, and its steady load: every RPC and reply sent in
// one second of wall time by an idle cluster (empty AppendEntries). Its
// time runs from the first vote, as in the main table.
const (
	poolWarmup = 2 * time.Second
	poolSteady = 5 * time.Second
	// MaxPoolN bounds the idle-pool axis's cluster sizes.
	MaxPoolN = 256
	// MaxRaftPoolN is the largest N the idle-pool axis runs Raft for: 64
	// in-process Raft nodes already keep two cores busy (MaxN).
	MaxRaftPoolN = MaxN
	// Emergent names the emergent algorithm's rows.
	Emergent Algorithm = Algorithm(classic.Emergent)
	// PoolCSVFile and PoolSVGFile are the files the idle-pool axis
	// writes beside CSVFile and SVGFile.
	PoolCSVFile = "elections-pool.csv"
	PoolSVGFile = "elections-pool.svg"
)

// DefaultPoolNs and DefaultPoolSizes are the idle-pool axis's defaults.
var (
	DefaultPoolNs    = []int{8, 16, 32, 64, 128, 256}
	DefaultPoolSizes = []int{3, 5, 7}
)

// PoolRow is one line of the idle-pool report.
type PoolRow struct {
	Algorithm Algorithm
	N         int
	// Pool is the emergent algorithm's slave pool (its Lower limit); 0
	// for the others.
	Pool int
	Runs int
	// Messages is the median number of election messages (heartbeats
	// apart; Raft: RPCs and replies).
	Messages uint64
	// Time is the median time from the crash (Raft: the first vote) to
	// agreement.
	Time time.Duration
	// SteadyPerSec is the median number of messages sent per second in
	// normal operation, the whole cluster together.
	SteadyPerSec float64
}

func (r PoolRow) label() string {
	if r.Algorithm == Emergent {
		return fmt.Sprintf("emergent S=%d", r.Pool)
	}
	return string(r.Algorithm)
}

// MeasurePool runs the idle-pool axis for every N in ns and pool size in
// sizes, seeds runs each.
func MeasurePool(ctx context.Context, ns, sizes []int, seeds int, raftTimeout time.Duration) ([]PoolRow, error) {
	var rows []PoolRow
	type series struct {
		alg  Algorithm
		pool int
	}
	var all []series
	for _, s := range sizes {
		all = append(all, series{Emergent, s})
	}
	all = append(all, series{Bully, 0}, series{Ring, 0}, series{Raft, 0})
	for _, se := range all {
		for _, n := range ns {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if n < MinN || n > MaxPoolN {
				return nil, fmt.Errorf("%w: pool cluster size %d is out of range %d..%d", ErrInvalidConfig, n, MinN, MaxPoolN)
			}
			if se.alg == Emergent && se.pool+2 > n {
				continue
			}
			if se.alg == Raft {
				if n > MaxRaftPoolN {
					continue
				}
				r, err := measureRaftPool(ctx, n, raftTimeout)
				if err != nil {
					return nil, err
				}
				rows = append(rows, r)
				continue
			}
			var msgs []uint64
			var times []time.Duration
			var steady []float64
			for i := 1; i <= seeds; i++ {
				seed := uint64(i)
				m, d, st, err := poolRun(se.alg, n, se.pool, seed)
				if err != nil {
					return nil, err
				}
				msgs, times, steady = append(msgs, m), append(times, d), append(steady, st)
			}
			rows = append(rows, PoolRow{Algorithm: se.alg, N: n, Pool: se.pool, Runs: seeds,
				Messages: medianOf(msgs), Time: medianOf(times), SteadyPerSec: medianOf(steady)})
		}
	}
	return rows, nil
}

func medianOf[T int | uint64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// poolRun is one classic run of the idle-pool axis.
func poolRun(alg Algorithm, n, pool int, seed uint64) (uint64, time.Duration, float64, error) {
	cfg := classic.DefaultSimConfig(classicAlg(alg), n, seed)
	cfg.MinDelay, cfg.MaxDelay = RandomMinDelay, RandomMaxDelay
	cfg.Coordinator = classic.SimID(n)
	if alg == Emergent {
		cfg.Pool.Lower, cfg.Pool.Upper = pool, pool+2
	}
	s, err := classic.NewSim(cfg)
	if err != nil {
		return 0, 0, 0, err
	}
	s.Run(poolWarmup)
	before := total(s.Sent(), true)
	s.Run(poolSteady)
	steady := float64(total(s.Sent(), true)-before) / poolSteady.Seconds()
	before = total(s.Sent(), false)
	s.Crash(classic.SimID(n))
	crash := s.Now()
	switch alg {
	case Emergent:
		s.Suspect(classic.SimID(n-pool), classic.SimID(n)) // the lowest slave
	case Bully:
		s.Suspect(classic.SimID(1), classic.SimID(n))
	case Ring:
		s.Elect(classic.SimID(1))
	}
	at, ok := s.Settle(settleLimit)
	if !ok {
		return 0, 0, 0, fmt.Errorf("%w: %s N=%d pool %d seed %d: no agreement after %v", ErrNotSettled, alg, n, pool, seed, settleLimit)
	}
	return total(s.Sent(), false) - before, at - crash, steady, nil
}

// total adds up the heartbeats (hb) or the election messages (!hb).
func total(sent map[classic.Kind]uint64, hb bool) uint64 {
	var t uint64
	for k, c := range sent {
		if (k == classic.KindHeartbeat || k == classic.KindSlaveHeartbeat) == hb {
			t += c
		}
	}
	return t
}

// measureRaftPool is one Raft leader crash and one second of its steady
// load.
func measureRaftPool(ctx context.Context, n int, timeout time.Duration) (PoolRow, error) {
	s, err := measureRaft(ctx, n, Best, 1, timeout)
	if err != nil {
		return PoolRow{}, err
	}
	var msgs uint64
	for _, c := range s.kinds {
		msgs += c
	}
	c, err := startRaftCluster(n, timeout, false, 1)
	if err != nil {
		return PoolRow{}, err
	}
	defer c.close()
	_, index, err := c.commit(ctx, c.nodes)
	if err != nil {
		return PoolRow{}, err
	}
	if err := c.waitApplied(ctx, index); err != nil {
		return PoolRow{}, err
	}
	c.counter.reset()
	start := time.Now()
	if err := sleepCtx(ctx, time.Second); err != nil {
		return PoolRow{}, err
	}
	counts, _ := c.counter.stop()
	var steady uint64
	for _, v := range counts {
		steady += v
	}
	return PoolRow{Algorithm: Raft, N: n, Runs: 1, Messages: msgs, Time: s.time,
		SteadyPerSec: float64(steady) / time.Since(start).Seconds()}, nil
}

// WritePoolTable prints the idle-pool rows as a Markdown table.
func WritePoolTable(w io.Writer, rows []PoolRow) error {
	var b bytes.Buffer
	b.WriteString("| algorithm | N | runs | messages per election | time to agreement | steady messages/s |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %.0f |\n", r.label(), r.N, r.Runs, r.Messages, ms(r.Time), r.SteadyPerSec)
	}
	b.WriteString("\nclassic: median over the seeds, virtual time from the master's crash (one node told of it at once) to agreement;\n" +
		"  steady: heartbeats per second, the whole cluster (emergent: master and slave heartbeats).\n" +
		"raft: one run, all N voters, wall time from the first vote; steady: RPCs and replies per second when idle.\n")
	_, err := w.Write(b.Bytes())
	return err
}

// WritePoolCSV writes the idle-pool rows as CSV.
func WritePoolCSV(w io.Writer, rows []PoolRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"algorithm", "pool", "n", "runs", "messages", "time_ms", "steady_msgs_per_sec"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{string(r.Algorithm), strconv.Itoa(r.Pool), strconv.Itoa(r.N), strconv.Itoa(r.Runs),
			strconv.FormatUint(r.Messages, 10), strconv.FormatFloat(float64(r.Time)/float64(time.Millisecond), 'f', 3, 64),
			strconv.FormatFloat(r.SteadyPerSec, 'f', 1, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

var poolColors = []string{"#ff7f0e", "#e377c2", "#8c564b", "#d62728", "#1f77b4", "#9467bd", "#17becf"}

// WritePoolSVG draws the idle-pool rows: three panels (messages per
// election, time to agreement, steady messages per second) against N on
// a log2 axis, with log10 values, one line per series.
func WritePoolSVG(w io.Writer, rows []PoolRow) error {
	var labels []string
	var ns []int
	for _, r := range rows {
		if !slices.Contains(labels, r.label()) {
			labels = append(labels, r.label())
		}
		if !slices.Contains(ns, r.N) {
			ns = append(ns, r.N)
		}
	}
	slices.Sort(ns)
	panels := []struct {
		title string
		value func(PoolRow) float64
	}{
		{"messages per election", func(r PoolRow) float64 { return float64(r.Messages) }},
		{"time to agreement (ms)", func(r PoolRow) float64 { return float64(r.Time) / float64(time.Millisecond) }},
		{"steady-state messages/s", func(r PoolRow) float64 { return r.SteadyPerSec }},
	}
	width := len(panels)*(panelW+panelGap) + panelGap
	height := chartTop + panelH + 2*panelGap
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12">`+"\n",
		width, height, width, height, svgFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(&b, panelGap, 22, "start", 16, "lockd-bench elections, idle-pool axis: the master crashes in a cluster of N (log scales)")
	for i, l := range labels {
		x := panelGap + i*legendItemW
		fmt.Fprintf(&b, `<rect x="%d" y="36" width="%d" height="%d" fill="%s"/>`+"\n", x, legendSwatchSize, legendSwatchSize, poolColors[i%len(poolColors)])
		text(&b, x+legendSwatchSize+6, 47, "start", 12, l)
	}
	lg := func(v float64) float64 { return math.Log10(max(v, 1)) }
	for pi, p := range panels {
		x0, y0 := panelGap+pi*(panelW+panelGap), chartTop
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
		fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", panelW, panelH)
		text(&b, panelW/2, 20, "middle", 13, p.title)
		top := 1.0
		for _, r := range rows {
			top = max(top, math.Ceil(lg(p.value(r))))
		}
		plotW, plotH := float64(panelW-padL-padR), float64(panelH-padT-padB)
		lo, hi := math.Log2(float64(ns[0])), math.Log2(float64(ns[len(ns)-1]))
		xOf := func(n int) float64 {
			if hi == lo {
				return padL + plotW/2
			}
			return padL + plotW*(math.Log2(float64(n))-lo)/(hi-lo)
		}
		yOf := func(v float64) float64 { return padT + plotH*(1-lg(v)/top) }
		for e := 0.0; e <= top; e++ {
			y := yOf(math.Pow(10, e))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", padL, y, panelW-padR, y)
			text(&b, padL-6, int(y)+4, "end", 11, formatTick(math.Pow(10, e)))
		}
		for _, n := range ns {
			text(&b, int(xOf(n)), panelH-padB+16, "middle", 11, strconv.Itoa(n))
		}
		text(&b, panelW/2, panelH-8, "middle", 11, "N (total nodes)")
		for i, l := range labels {
			var pts []string
			for _, r := range rows {
				if r.label() == l {
					x, y := xOf(r.N), yOf(p.value(r))
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`+"\n", x, y, markerRadius, poolColors[i%len(poolColors)])
				}
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", joinPts(pts), poolColors[i%len(poolColors)])
			}
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func joinPts(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// WritePoolFiles writes PoolCSVFile and PoolSVGFile to dir.
func WritePoolFiles(dir string, rows []PoolRow) error {
	if err := writeAny(filepath.Join(dir, PoolCSVFile), func(w io.Writer) error { return WritePoolCSV(w, rows) }); err != nil {
		return err
	}
	return writeAny(filepath.Join(dir, PoolSVGFile), func(w io.Writer) error { return WritePoolSVG(w, rows) })
}

func writeAny(path string, write func(io.Writer) error) error {
	return writeFile(path, nil, func(w io.Writer, _ []Row) error { return write(w) })
}
