package elections

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mustRun runs a quick bench (N = 3 and 5, two seeds) into a temporary
// directory and returns its rows and its table. Under -short it leaves
// Raft out: its runs take wall time.
func mustRun(t *testing.T) (Config, []Row, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Ns, cfg.Seeds, cfg.Out = []int{3, 5}, 2, t.TempDir()
	cfg.PoolNs = nil // the idle-pool axis has its own test
	if testing.Short() {
		cfg.Algorithms = []Algorithm{Ring, Bully, Invitation}
	}
	var table bytes.Buffer
	cfg.Output = &table
	rows, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return cfg, rows, table.String()
}

// TestRun_Quick checks a quick run end to end: a row for every
// algorithm, size and scenario, in the table too; the classic best and
// worst rows equal the textbook figures package classic pins; Raft rows
// count votes and appends; the CSV parses and the SVG is well-formed XML.
func TestRun_Quick(t *testing.T) {
	cfg, rows, table := mustRun(t)
	t.Logf("\n%s", table)

	t.Run("every row", func(t *testing.T) {
		tableRows := parseTable(t, table)
		i := 0
		for _, alg := range cfg.Algorithms {
			for _, n := range cfg.Ns {
				for _, sc := range Scenarios {
					if i >= len(rows) {
						t.Fatalf("only %d rows, want more", len(rows))
					}
					r := rows[i]
					if r.Algorithm != alg || r.N != n || r.Scenario != sc {
						t.Errorf("row %d is %s/%d/%s, want %s/%d/%s", i, r.Algorithm, r.N, r.Scenario, alg, n, sc)
					}
					want := []string{string(alg), strconv.Itoa(n), string(sc), strconv.FormatUint(r.Messages, 10)}
					if i >= len(tableRows) || !slices.Equal(tableRows[i], want) {
						t.Errorf("table row %d = %v, want %v", i, tableRows[i:min(i+1, len(tableRows))], want)
					}
					wantRuns := 1
					if sc == Random {
						wantRuns = cfg.Seeds
					}
					if r.Runs != wantRuns || r.MessagesMin > r.Messages || r.Messages > r.MessagesMax || r.Messages == 0 {
						t.Errorf("%s/%d/%s: runs %d, messages %d in [%d..%d]", alg, n, sc, r.Runs, r.Messages, r.MessagesMin, r.MessagesMax)
					}
					i++
				}
			}
		}
		if len(rows) != i || len(tableRows) != i {
			t.Errorf("%d rows and %d table rows, want %d", len(rows), len(tableRows), i)
		}
	})

	t.Run("textbook figures", func(t *testing.T) {
		for _, r := range rows {
			if r.Scenario == Random || r.Algorithm == Raft {
				continue
			}
			want := textbook(r.Algorithm, r.N, r.Scenario)
			var total uint64
			for _, c := range want {
				total += c
			}
			if !maps(r.Kinds, want) || r.Messages != total {
				t.Errorf("%s N=%d %s: %d messages %v, want %d %v", r.Algorithm, r.N, r.Scenario, r.Messages, r.Kinds, total, want)
			}
		}
	})

	t.Run("raft counts votes and appends", func(t *testing.T) {
		if testing.Short() {
			t.Skip("raft runs take wall time")
		}
		for _, r := range rows {
			if r.Algorithm != Raft {
				continue
			}
			k := r.Kinds
			if k[KindPreVote]+k[KindVote] == 0 || k[KindAppendEntries]+k[KindAppendEmpty] == 0 || k[KindReply] == 0 {
				t.Errorf("raft N=%d %s: %v, want votes, appends and replies", r.N, r.Scenario, k)
			}
			if r.Clock != Wall || r.Time <= 0 {
				t.Errorf("raft N=%d %s: clock %s, time %v", r.N, r.Scenario, r.Clock, r.Time)
			}
		}
	})

	t.Run("csv", func(t *testing.T) {
		recs := readCSV(t, filepath.Join(cfg.Out, CSVFile))
		if len(recs) != len(rows)+1 {
			t.Fatalf("%d CSV records, want a header and %d rows", len(recs), len(rows))
		}
		col := slices.Index(recs[0], "messages")
		for i, r := range rows {
			rec := recs[i+1]
			if rec[0] != string(r.Algorithm) || rec[1] != strconv.Itoa(r.N) || rec[2] != string(r.Scenario) ||
				rec[col] != strconv.FormatUint(r.Messages, 10) {
				t.Errorf("CSV record %d = %v, want %s/%d/%s with %d messages", i+1, rec, r.Algorithm, r.N, r.Scenario, r.Messages)
			}
			for _, k := range kindsOf(r.Algorithm) {
				if got := rec[slices.Index(recs[0], k)]; got != strconv.FormatUint(r.Kinds[k], 10) {
					t.Errorf("CSV record %d: %s = %s, want %d", i+1, k, got, r.Kinds[k])
				}
			}
		}
	})

	t.Run("svg", func(t *testing.T) {
		mustWellFormedSVG(t, filepath.Join(cfg.Out, SVGFile))
	})
}

// TestClassic_TextbookFigures checks the classic best and worst cases
// against the textbook figures for the sizes package classic's textbook
// tests use, and that they do not depend on the seed.
func TestClassic_TextbookFigures(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully, Invitation} {
		for _, n := range []int{3, 4, 5, 8, 16} {
			for _, sc := range []Scenario{Best, Worst} {
				want := textbook(alg, n, sc)
				for _, seed := range []uint64{1, 2} {
					s, err := measureClassic(alg, n, sc, seed)
					if err != nil {
						t.Fatal(err)
					}
					if !maps(s.kinds, want) {
						t.Errorf("%s N=%d %s seed %d: %v, want %v", alg, n, sc, seed, s.kinds, want)
					}
				}
			}
		}
	}
}

// textbook returns the election messages by kind that package classic's
// textbook tests pin for a classic best or worst row.
func textbook(alg Algorithm, n int, sc Scenario) map[string]uint64 {
	N := uint64(n)
	switch {
	case alg == Ring && sc == Best: // 2N
		return map[string]uint64{"election": N, "elected": N}
	case alg == Ring: // 3N - 1
		return map[string]uint64{"election": 2*N - 1, "elected": N}
	case alg == Bully && sc == Best: // N - 2 Coordinator
		return map[string]uint64{"coordinator": N - 2}
	case alg == Bully: // N(N-1)/2 + (N-1)(N-2)/2 + N - 2
		return map[string]uint64{"election": N * (N - 1) / 2, "answer": (N - 1) * (N - 2) / 2, "coordinator": N - 2}
	}
	// Invitation: one merge that invites every process but the inviter,
	// after the probes (see classic.go).
	probes := map[Scenario][2]uint64{
		// Best: the two halves' coordinators probe the other half.
		Best: {bestProbes(n), bestProbes(n)},
		// Worst: every process probes every other at boot; those to
		// processes not booted yet (higher ranks) are lost unanswered.
		Worst: {N * (N - 1), N * (N - 1) / 2},
	}[sc]
	return map[string]uint64{"probe": probes[0], "probe_reply": probes[1], "invitation": N - 1,
		"accept": N - 1, "accept_answer": N - 1, "ready": N - 1, "ready_answer": N - 1}
}

// bestProbes is the probes (and replies) of the invitation's best case:
// nN probes the lower half, N - N/2 processes, each of which answers.
func bestProbes(n int) uint64 { return uint64(n - n/2) }

func maps(got, want map[string]uint64) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	for k, v := range got {
		if want[k] != v {
			return false
		}
	}
	return true
}

// parseTable returns the first four cells (algorithm, N, scenario,
// messages) of each data line of a table WriteTable printed.
func parseTable(t *testing.T, table string) [][]string {
	t.Helper()
	var out [][]string
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) < 5 {
			t.Fatalf("table line %d has %d cells: %q", i, len(cells), line)
		}
		if i < 2 { // header and rule
			continue
		}
		out = append(out, []string{cells[0], cells[1], cells[2], cells[4]})
	}
	return out
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// mustWellFormedSVG parses the file as XML to the end and checks that
// its root is an svg element with at least one line drawn.
func mustWellFormedSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	var root string
	polylines := 0
	for range 1_000_000 { // bounded: far more tokens than a chart has
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				polylines++
			}
		}
	}
	if root != "svg" || polylines == 0 {
		t.Errorf("%s: root <%s>, %d polylines; want <svg> with lines", path, root, polylines)
	}
}

func TestParseNs(t *testing.T) {
	cases := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"3,5,7,9,16", []int{3, 5, 7, 9, 16}, false},
		{" 16, 3 ,3,5 ", []int{3, 5, 16}, false},
		{"3,,5", []int{3, 5}, false},
		{"", nil, true},
		{",", nil, true},
		{"2", nil, true},
		{"65", nil, true},
		{"five", nil, true},
		{"3;5", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseNs(tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseNs(%q) = %v, %v; want ErrInvalidConfig", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseNs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseAlgorithms(t *testing.T) {
	cases := []struct {
		in      string
		want    []Algorithm
		wantErr bool
	}{
		{"ring,bully,invitation,raft", Algorithms, false},
		{"RAFT, ring,raft", []Algorithm{Ring, Raft}, false},
		{"", nil, true},
		{"paxos", nil, true},
		{"ring,paxos", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseAlgorithms(tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseAlgorithms(%q) = %v, %v; want ErrInvalidConfig", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseAlgorithms(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"no sizes", func(c *Config) { c.Ns = nil }, false},
		{"size too small", func(c *Config) { c.Ns = []int{2} }, false},
		{"no seeds", func(c *Config) { c.Seeds = 0 }, false},
		{"too many seeds", func(c *Config) { c.Seeds = MaxSeeds + 1 }, false},
		{"no algorithms", func(c *Config) { c.Algorithms = nil }, false},
		{"unknown algorithm", func(c *Config) { c.Algorithms = []Algorithm{"paxos"} }, false},
		{"raft timeout too short", func(c *Config) { c.RaftTimeout = time.Millisecond }, false},
		{"pool N too large", func(c *Config) { c.PoolNs = []int{8, 512} }, false},
		{"pool size zero", func(c *Config) { c.PoolSizes = []int{0} }, false},
		{"no pool axis", func(c *Config) { c.PoolNs = nil }, true},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		tc.edit(&cfg)
		if err := cfg.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestSummarize_LowerMedian checks that a Random row reports the lower
// median and the range of each figure.
func TestSummarize_LowerMedian(t *testing.T) {
	var samples []sample
	for _, c := range []uint64{40, 10, 30, 20} {
		samples = append(samples, sample{kinds: map[string]uint64{"election": c, "elected": 1},
			time: time.Duration(c) * time.Millisecond})
	}
	r := summarize(Ring, 5, Random, samples)
	if r.Runs != 4 || r.Messages != 21 || r.MessagesMin != 11 || r.MessagesMax != 41 ||
		r.Kinds["election"] != 20 || r.Time != 20*time.Millisecond || r.TimeMax != 40*time.Millisecond {
		t.Errorf("summarize = %+v", r)
	}
}

// TestMeasurePool_EmergentCostIndependentOfN checks the idle-pool axis on
// a small scale: the emergent election's messages are the same for N = 8
// and N = 64 with a pool of 3, while the bully's grow; the emergent
// steady load grows with N like the others' but by its slave heartbeats
// more; and the files are written.
func TestMeasurePool_EmergentCostIndependentOfN(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Raft")
	}
	rows, err := MeasurePool(context.Background(), []int{8, 64}, []int{3}, 3, DefaultRaftTimeout)
	if err != nil {
		t.Fatal(err)
	}
	get := func(a Algorithm, n int) PoolRow {
		for _, r := range rows {
			if r.Algorithm == a && r.N == n {
				return r
			}
		}
		t.Fatalf("no row for %s N=%d in %+v", a, n, rows)
		return PoolRow{}
	}
	e8, e64, b8, b64 := get(Emergent, 8), get(Emergent, 64), get(Bully, 8), get(Bully, 64)
	if e8.Messages != e64.Messages || e8.Messages == 0 {
		t.Errorf("emergent messages: N=8 %d, N=64 %d; want equal and non-zero", e8.Messages, e64.Messages)
	}
	if b64.Messages <= 10*b8.Messages {
		t.Errorf("bully messages: N=8 %d, N=64 %d; want far more at 64", b8.Messages, b64.Messages)
	}
	if e64.SteadyPerSec <= b64.SteadyPerSec {
		t.Errorf("steady load at N=64: emergent %.0f/s, bully %.0f/s; want emergent's slave heartbeats on top", e64.SteadyPerSec, b64.SteadyPerSec)
	}
	get(Raft, 64)
	dir := t.TempDir()
	if err := WritePoolFiles(dir, rows); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WritePoolTable(&b, rows); err != nil || !strings.Contains(b.String(), "emergent S=3") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
