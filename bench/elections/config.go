package elections

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/classic"
)

// Algorithm names what a row measures: one of package classic's
// algorithms, or Raft.
type Algorithm string

// The algorithms, by the names --algorithms accepts, in the order the
// report prints them.
const (
	Ring       = Algorithm(classic.Ring)
	Bully      = Algorithm(classic.Bully)
	Invitation = Algorithm(classic.Invitation)
	// Raft is hashicorp/raft, as lockd's lease package runs it.
	Raft Algorithm = "raft"
)

// Algorithms lists every algorithm, in report order.
var Algorithms = []Algorithm{Ring, Bully, Invitation, Raft}

// classic reports whether the algorithm runs in classic.Sim.
func (a Algorithm) classic() bool { return a != Raft }

// ParseAlgorithms parses a comma-separated list such as "ring,raft",
// ignoring case and spaces. It returns the algorithms in report order,
// each once.
func ParseAlgorithms(s string) ([]Algorithm, error) {
	seen := map[Algorithm]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		a := Algorithm(f)
		if !slices.Contains(Algorithms, a) {
			return nil, fmt.Errorf("%w: unknown algorithm %q (want ring, bully, invitation or raft)", ErrInvalidConfig, f)
		}
		seen[a] = true
	}
	var out []Algorithm
	for _, a := range Algorithms {
		if seen[a] {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no algorithm given", ErrInvalidConfig)
	}
	return out, nil
}

// ParseNs parses a comma-separated list of cluster sizes such as
// "3,5,16". It returns them sorted, each once, and checks each against
// MinN and MaxN.
func ParseNs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster size %q is not a whole number", ErrInvalidConfig, f)
		}
		if n < MinN || n > MaxN {
			return nil, fmt.Errorf("%w: cluster size %d is out of range %d..%d", ErrInvalidConfig, n, MinN, MaxN)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no cluster size given", ErrInvalidConfig)
	}
	slices.Sort(out)
	return out, nil
}

// Scenario names the circumstances of an election; classic.go and raft.go
// say exactly what each one is for each algorithm.
type Scenario string

// The scenarios, in report order.
const (
	// Best is the textbooks' best case: the fewest messages.
	Best Scenario = "best"
	// Worst is the textbooks' worst case: the most messages.
	Worst Scenario = "worst"
	// Random is a coordinator crash noticed by random detectors over a
	// network with random delays, repeated with Config.Seeds seeds; the
	// report gives the median and the range.
	Random Scenario = "random"
)

// Scenarios lists every scenario, in report order.
var Scenarios = []Scenario{Best, Worst, Random}

// Bounds and defaults of Config.
const (
	// MinN is the smallest cluster measured: Raft needs three nodes to
	// survive the loss of its leader.
	MinN = 3
	// MaxN bounds the cluster size; 64 in-process Raft nodes already keep
	// two cores busy with heartbeats.
	MaxN = 64
	// DefaultSeeds is how many random runs make a Random row.
	DefaultSeeds = 10
	// MaxSeeds bounds Config.Seeds: a Raft run takes about a second.
	MaxSeeds = 1000
	// DefaultOut is the directory the CSV and SVG files go to.
	DefaultOut = "bench-out"
	// DefaultRaftTimeout is the HeartbeatTimeout and ElectionTimeout of
	// the Raft nodes: shorter than lockd's production 500ms, to keep the
	// bench quick, and still 40 times the in-process round trip.
	DefaultRaftTimeout = 200 * time.Millisecond
	// MinRaftTimeout is the shortest Config.RaftTimeout accepted.
	MinRaftTimeout = 20 * time.Millisecond
)

// DefaultNs are the cluster sizes measured by default.
var DefaultNs = []int{3, 5, 7, 9, 16}

// Config says what to measure and where to write the results. Start from
// DefaultConfig.
type Config struct {
	// Ns are the cluster sizes, each in MinN..MaxN.
	Ns []int
	// Seeds is the number of runs behind each Random row, 1..MaxSeeds.
	// Run i uses seed i, so a report can be reproduced.
	Seeds int
	// Algorithms are the algorithms to measure.
	Algorithms []Algorithm
	// Out is the directory Run writes elections.csv and elections.svg
	// to, created if needed. Empty writes no files.
	Out string
	// Output receives the text table. Nil discards it.
	Output io.Writer
	// RaftTimeout is the Raft nodes' HeartbeatTimeout and
	// ElectionTimeout; a follower suspects its leader after one to two
	// of them. Default DefaultRaftTimeout.
	RaftTimeout time.Duration
	// Logger receives one line per row measured (component=bench). Nil
	// discards.
	Logger *slog.Logger
	// PoolNs are the idle-pool axis's cluster sizes (pool.go), each in
	// MinN..MaxPoolN; empty skips the axis. PoolSizes are its emergent
	// slave pool sizes.
	PoolNs, PoolSizes []int
}

// DefaultConfig measures every algorithm for DefaultNs with DefaultSeeds
// seeds, writing to DefaultOut and printing nothing.
func DefaultConfig() Config {
	return Config{
		Ns:          slices.Clone(DefaultNs),
		Seeds:       DefaultSeeds,
		Algorithms:  slices.Clone(Algorithms),
		Out:         DefaultOut,
		RaftTimeout: DefaultRaftTimeout,
		PoolNs:      slices.Clone(DefaultPoolNs),
		PoolSizes:   slices.Clone(DefaultPoolSizes),
	}
}

// Validate names the first bound the config breaks.
func (c Config) Validate() error {
	if len(c.Ns) == 0 {
		return fmt.Errorf("%w: no cluster size given", ErrInvalidConfig)
	}
	for _, n := range c.Ns {
		if n < MinN || n > MaxN {
			return fmt.Errorf("%w: cluster size %d is out of range %d..%d", ErrInvalidConfig, n, MinN, MaxN)
		}
	}
	if c.Seeds < 1 || c.Seeds > MaxSeeds {
		return fmt.Errorf("%w: seeds must be in 1..%d, got %d", ErrInvalidConfig, MaxSeeds, c.Seeds)
	}
	if len(c.Algorithms) == 0 {
		return fmt.Errorf("%w: no algorithm given", ErrInvalidConfig)
	}
	for _, a := range c.Algorithms {
		if !slices.Contains(Algorithms, a) {
			return fmt.Errorf("%w: unknown algorithm %q", ErrInvalidConfig, a)
		}
	}
	for _, n := range c.PoolNs {
		if n < MinN || n > MaxPoolN {
			return fmt.Errorf("%w: pool cluster size %d is out of range %d..%d", ErrInvalidConfig, n, MinN, MaxPoolN)
		}
	}
	for _, s := range c.PoolSizes {
		if s < 1 || s > 16 {
			return fmt.Errorf("%w: slave pool size %d is out of range 1..16", ErrInvalidConfig, s)
		}
	}
	if c.RaftTimeout < MinRaftTimeout {
		return fmt.Errorf("%w: RaftTimeout must be at least %v, got %v", ErrInvalidConfig, MinRaftTimeout, c.RaftTimeout)
	}
	return nil
}
