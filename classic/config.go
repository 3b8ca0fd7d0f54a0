package classic

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/internal/mux"
)

// Algorithm names one of the classic election algorithms.
type Algorithm string

// The algorithms, by the names `lockd serve --election` accepts.
const (
	// Ring is Chang and Roberts' ring election as taught (UIUC CS 425,
	// Edinburgh DS lecture 11).
	Ring Algorithm = "ring"
	// Bully is Garcia-Molina's bully algorithm as taught.
	Bully Algorithm = "bully"
	// Invitation is Garcia-Molina's invitation algorithm, for partitions
	// and asynchronous timing.
	Invitation Algorithm = "invitation"
	// Emergent is the emergent election (R. J. Anthony, ICAC 2004): a
	// small pool of slaves elects the master by bully among themselves,
	// while idle nodes only watch the pool (emergent.go).
	Emergent Algorithm = "emergent"
)

// Algorithms lists every algorithm, in the order reports print them.
var Algorithms = []Algorithm{Ring, Bully, Invitation, Emergent}

// ParseAlgorithm parses "ring", "bully", "invitation" or "emergent", ignoring case and
// surrounding space.
func ParseAlgorithm(s string) (Algorithm, error) {
	a := Algorithm(strings.ToLower(strings.TrimSpace(s)))
	if !a.valid() {
		return "", fmt.Errorf("%w %q (want ring, bully, invitation or emergent)", ErrUnknownAlgorithm, s)
	}
	return a, nil
}

func (a Algorithm) valid() bool {
	return a == Ring || a == Bully || a == Invitation || a == Emergent
}

// Proto returns the internal/mux protocol byte the algorithm's peer
// traffic uses, or 0 for an unknown algorithm.
func (a Algorithm) Proto() byte {
	switch a {
	case Ring:
		return mux.ProtoRing
	case Bully:
		return mux.ProtoBully
	case Invitation:
		return mux.ProtoInvitation
	case Emergent:
		return mux.ProtoEmergent
	}
	return 0
}

// Kinds returns the message kinds the algorithm sends, heartbeats last.
func (a Algorithm) Kinds() []Kind {
	switch a {
	case Ring:
		return []Kind{KindElection, KindElected, KindHeartbeat}
	case Bully:
		return []Kind{KindElection, KindAnswer, KindCoordinator, KindHeartbeat}
	case Invitation:
		return []Kind{KindProbe, KindProbeReply, KindInvitation, KindAccept,
			KindAcceptAnswer, KindReady, KindReadyAnswer, KindHeartbeat}
	case Emergent:
		return []Kind{KindElection, KindAnswer, KindCoordinator, KindHeartbeat, KindSlaveHeartbeat}
	}
	return nil
}

// Rank returns a node id's priority: the decimal number the id ends with,
// so "n12" has rank 12 and outranks "n9". The ring runs clockwise from
// each node to the node of next higher rank, and from the highest rank
// back to the lowest; "the highest id" of the textbooks is the highest
// rank. An id without a trailing number has no rank (ErrBadNodeID).
func Rank(id string) (int, error) {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	digits := id[i:]
	if digits == "" || len(digits) > 9 {
		return 0, fmt.Errorf("%w: %q", ErrBadNodeID, id)
	}
	r, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrBadNodeID, id)
	}
	return r, nil
}

// sortByRank returns ids ordered by ascending rank (the ring order), after
// checking that every id has a rank and no two share one.
func sortByRank(ids []string) ([]string, map[string]int, error) {
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("%w: Members is empty", ErrInvalidConfig)
	}
	ranks := make(map[string]int, len(ids))
	byRank := make(map[int]string, len(ids))
	for _, id := range ids {
		r, err := Rank(id)
		if err != nil {
			return nil, nil, err
		}
		if other, dup := byRank[r]; dup {
			return nil, nil, fmt.Errorf("%w: %q and %q have the same rank %d", ErrInvalidConfig, other, id, r)
		}
		ranks[id], byRank[r] = r, id
	}
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b string) int { return ranks[a] - ranks[b] })
	return sorted, ranks, nil
}

// Defaults of Timing, sized for a LAN whose one-way delay stays well under
// 10ms. Every timeout is a multiple of that bound, so that no healthy peer
// is taken for dead.
const (
	// DefaultHeartbeatInterval: the coordinator tells its members it is
	// alive ten times a second.
	DefaultHeartbeatInterval = 100 * time.Millisecond
	// DefaultSuspectTimeout: five missed heartbeats make a member suspect
	// its coordinator.
	DefaultSuspectTimeout = 500 * time.Millisecond
	// DefaultElectedTimeout: a ring participant waits this long for the
	// Elected message; three trips round a ring of 16 at 10ms a hop fit
	// with room to spare.
	DefaultElectedTimeout = time.Second
	// DefaultAnswerTimeout is the bully's T: ten round trips.
	DefaultAnswerTimeout = 100 * time.Millisecond
	// DefaultCoordinatorTimeout is the bully's T': long enough for the
	// process that answered to run its own election (T) and announce.
	DefaultCoordinatorTimeout = 300 * time.Millisecond
	// DefaultCheckInterval: an invitation coordinator looks for other
	// coordinators twice a second.
	DefaultCheckInterval = 500 * time.Millisecond
	// DefaultMergeDelay: per step of rank below the highest, an invitation
	// coordinator waits this much longer before it invites, so that the
	// higher one invites first.
	DefaultMergeDelay = 50 * time.Millisecond
	// DefaultReplyTimeout: how long an invitation coordinator collects
	// replies to its probes and accepts to its invitation.
	DefaultReplyTimeout = 100 * time.Millisecond
)

// Timing holds the timeouts of the failure detector and the algorithms.
// All durations are wall time for a Node and virtual time in a Sim.
type Timing struct {
	// HeartbeatInterval is how often a coordinator sends Heartbeat to its
	// members. Shorter detects a failure sooner and costs more messages.
	HeartbeatInterval time.Duration
	// SuspectTimeout is how long a member waits without hearing from its
	// coordinator before it suspects it and starts an election; it is
	// also how long a peer stays marked down after a failed send. It must
	// exceed HeartbeatInterval by several one-way delays, or a slow
	// network looks like a dead coordinator.
	SuspectTimeout time.Duration
	// ElectedTimeout (ring) is how long a participant waits for the
	// Elected message before it starts the election again.
	ElectedTimeout time.Duration
	// AnswerTimeout (bully, the textbooks' T) is how long a process that
	// sent Election waits for an Answer before it takes the lead. It must
	// exceed a round trip.
	AnswerTimeout time.Duration
	// CoordinatorTimeout (bully, T') is how long a process that got an
	// Answer waits for the Coordinator message before it starts again. It
	// must exceed AnswerTimeout plus two one-way delays.
	CoordinatorTimeout time.Duration
	// CheckInterval (invitation) is how often a coordinator asks the
	// processes outside its group whether they are coordinators.
	CheckInterval time.Duration
	// MergeDelay (invitation) is the wait per step of rank below the
	// highest before a coordinator that found others invites them.
	MergeDelay time.Duration
	// ReplyTimeout (invitation) is how long a coordinator collects probe
	// replies and accepts; a member waits twice as long for Ready.
	ReplyTimeout time.Duration
}

// DefaultTiming returns the LAN defaults above.
func DefaultTiming() Timing {
	return Timing{
		HeartbeatInterval:  DefaultHeartbeatInterval,
		SuspectTimeout:     DefaultSuspectTimeout,
		ElectedTimeout:     DefaultElectedTimeout,
		AnswerTimeout:      DefaultAnswerTimeout,
		CoordinatorTimeout: DefaultCoordinatorTimeout,
		CheckInterval:      DefaultCheckInterval,
		MergeDelay:         DefaultMergeDelay,
		ReplyTimeout:       DefaultReplyTimeout,
	}
}

// Validate names the first bound the timing breaks.
func (t Timing) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"HeartbeatInterval", t.HeartbeatInterval},
		{"SuspectTimeout", t.SuspectTimeout},
		{"ElectedTimeout", t.ElectedTimeout},
		{"AnswerTimeout", t.AnswerTimeout},
		{"CoordinatorTimeout", t.CoordinatorTimeout},
		{"CheckInterval", t.CheckInterval},
		{"MergeDelay", t.MergeDelay},
		{"ReplyTimeout", t.ReplyTimeout},
	} {
		if f.d <= 0 {
			return fmt.Errorf("%w: %s must be positive, got %v", ErrInvalidConfig, f.name, f.d)
		}
	}
	if t.SuspectTimeout <= t.HeartbeatInterval {
		return fmt.Errorf("%w: SuspectTimeout (%v) must exceed HeartbeatInterval (%v)",
			ErrInvalidConfig, t.SuspectTimeout, t.HeartbeatInterval)
	}
	if t.CoordinatorTimeout <= t.AnswerTimeout {
		return fmt.Errorf("%w: CoordinatorTimeout (%v) must exceed AnswerTimeout (%v)",
			ErrInvalidConfig, t.CoordinatorTimeout, t.AnswerTimeout)
	}
	return nil
}

// Config configures one elector. Start from DefaultConfig and set ID and
// Members.
type Config struct {
	// ID is this node's id; it must be one of Members.
	ID string
	// Members lists every node of the cluster, this one included, in any
	// order. Each id must end in a distinct rank (see Rank).
	Members []string
	// Algorithm picks the election algorithm. Default Bully.
	Algorithm Algorithm
	// Timing holds the timeouts. Default DefaultTiming().
	Timing
	// Pool configures the emergent algorithm's slave pool; the other
	// algorithms ignore it. Default DefaultPool().
	Pool Pool
	// Seed seeds the node's own random choices (the emergent algorithm's
	// trigger times). Zero: NewNode draws one from the clock.
	Seed uint64
	// Logger receives state changes (component=classic). Nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns a bully elector with the LAN timing; ID and Members
// are left for the caller.
func DefaultConfig() Config {
	return Config{Algorithm: Bully, Timing: DefaultTiming(), Pool: DefaultPool()}
}

// Validate names the first bound the config breaks.
func (c Config) Validate() error {
	if !c.Algorithm.valid() {
		return fmt.Errorf("%w: %w %q", ErrInvalidConfig, ErrUnknownAlgorithm, c.Algorithm)
	}
	if _, _, err := sortByRank(c.Members); err != nil {
		return err
	}
	if !slices.Contains(c.Members, c.ID) {
		return fmt.Errorf("%w: ID %q is not one of Members", ErrInvalidConfig, c.ID)
	}
	if c.Algorithm == Emergent {
		if err := c.Pool.Validate(); err != nil {
			return err
		}
	}
	return c.Timing.Validate()
}

// Defaults of Pool.
const (
	// DefaultPoolLower and DefaultPoolUpper: an idle node promotes itself
	// when it counts fewer than three slaves, a slave demotes itself when
	// it counts more than five.
	DefaultPoolLower = 3
	DefaultPoolUpper = 5
	// DefaultSlaveHeartbeatInterval: a slave tells every node it is a
	// slave twice a second, a fifth of the master's rate.
	DefaultSlaveHeartbeatInterval = 500 * time.Millisecond
	// DefaultSlaveTimeout: a slave not heard for three of its intervals is
	// no longer counted.
	DefaultSlaveTimeout = 1500 * time.Millisecond
	// DefaultTriggerJitter: each node waits its own random delay, up to a
	// second, between seeing the pool out of its limits and acting on it.
	DefaultTriggerJitter = time.Second
	// DefaultMissedHeartbeats: the elected candidate waits three master
	// heartbeat intervals before it takes over.
	DefaultMissedHeartbeats = 3
)

// Pool configures the emergent algorithm's slave pool (emergent.go).
type Pool struct {
	// Lower and Upper are the trigger limits, Lower <= Upper: an idle node
	// that counts fewer than Lower slaves promotes itself, a slave that
	// counts more than Upper (itself included) demotes itself. The gap
	// between them keeps the pool from flapping.
	Lower, Upper int
	// SlaveHeartbeatInterval is how often a slave (or candidate) sends
	// SlaveHeartbeat to every other node.
	SlaveHeartbeatInterval time.Duration
	// SlaveTimeout is how long a node counts a slave after its last
	// slave heartbeat. It must exceed SlaveHeartbeatInterval.
	SlaveTimeout time.Duration
	// TriggerJitter bounds each node's trigger time: how long the pool
	// must stay out of its limits before the node acts, drawn anew, at
	// random in [0, TriggerJitter], at boot and after each of its own
	// transitions. Different nodes thus act at different times.
	TriggerJitter time.Duration
	// MissedHeartbeats is how many master heartbeat intervals the elected
	// candidate (and the candidates that follow it) wait, listening for
	// the old master, before it takes over.
	MissedHeartbeats int
}

// DefaultPool returns the defaults above.
func DefaultPool() Pool {
	return Pool{
		Lower:                  DefaultPoolLower,
		Upper:                  DefaultPoolUpper,
		SlaveHeartbeatInterval: DefaultSlaveHeartbeatInterval,
		SlaveTimeout:           DefaultSlaveTimeout,
		TriggerJitter:          DefaultTriggerJitter,
		MissedHeartbeats:       DefaultMissedHeartbeats,
	}
}

// Validate names the first bound the pool breaks.
func (p Pool) Validate() error {
	switch {
	case p.Lower < 1 || p.Upper < p.Lower:
		return fmt.Errorf("%w: want 1 <= Pool.Lower <= Pool.Upper, got %d and %d", ErrInvalidConfig, p.Lower, p.Upper)
	case p.SlaveHeartbeatInterval <= 0:
		return fmt.Errorf("%w: Pool.SlaveHeartbeatInterval must be positive, got %v", ErrInvalidConfig, p.SlaveHeartbeatInterval)
	case p.SlaveTimeout <= p.SlaveHeartbeatInterval:
		return fmt.Errorf("%w: Pool.SlaveTimeout (%v) must exceed Pool.SlaveHeartbeatInterval (%v)",
			ErrInvalidConfig, p.SlaveTimeout, p.SlaveHeartbeatInterval)
	case p.TriggerJitter < 0:
		return fmt.Errorf("%w: Pool.TriggerJitter must not be negative, got %v", ErrInvalidConfig, p.TriggerJitter)
	case p.MissedHeartbeats < 1:
		return fmt.Errorf("%w: Pool.MissedHeartbeats must be at least 1, got %d", ErrInvalidConfig, p.MissedHeartbeats)
	}
	return nil
}
