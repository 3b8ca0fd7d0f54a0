package elections

import (
	"slices"
	"time"
)

// Clock says what a row's times are.
type Clock string

// The clocks.
const (
	// Virtual: classic.Sim's clock, exact and free of load.
	Virtual Clock = "virtual"
	// Wall: this machine's monotonic clock; depends on the load.
	Wall Clock = "wall"
)

// Row is one line of the report: one algorithm, cluster size and
// scenario. For Random, every figure is the median over the runs (the
// lower median for an even number), taken figure by figure, so the
// medians of the kinds need not add up to the median of Messages.
type Row struct {
	Algorithm Algorithm
	N         int
	Scenario  Scenario
	// Runs is how many elections the row summarizes: 1 for Best and
	// Worst, Config.Seeds for Random.
	Runs int
	// Clock says whether the times are virtual or wall-clock.
	Clock Clock
	// Messages is the number of election messages sent, heartbeats not
	// included; for Raft, RPCs and their replies (see Kinds).
	Messages uint64
	// MessagesMin and MessagesMax are the range over the runs.
	MessagesMin, MessagesMax uint64
	// Kinds counts the election messages by kind: classic.Kind names
	// for the classic algorithms, the RaftKinds for Raft.
	Kinds map[string]uint64
	// Heartbeats is the number of classic heartbeats sent during the
	// election, not counted in Messages. Raft has no separate heartbeat:
	// its empty AppendEntries are in Messages (KindAppendEmpty).
	Heartbeats uint64
	// Time is the time to agreement: from the start of the election to
	// the moment every living node agrees (classic) or the new leader's
	// first Apply has committed (Raft).
	Time time.Duration
	// TimeMin and TimeMax are the range over the runs.
	TimeMin, TimeMax time.Duration
	// Detect (Raft only) is the time from the leader's crash to the first
	// PreVote or RequestVote: Raft's failure detection, which comes
	// before Time. The classic scenarios start with the detection.
	Detect time.Duration
}

// sample is one measured election.
type sample struct {
	kinds      map[string]uint64
	heartbeats uint64
	time       time.Duration
	detect     time.Duration
}

func (s sample) total() uint64 {
	var n uint64
	for _, c := range s.kinds {
		n += c
	}
	return n
}

// summarize folds the samples of one algorithm, size and scenario into a
// row.
func summarize(alg Algorithm, n int, sc Scenario, samples []sample) Row {
	r := Row{Algorithm: alg, N: n, Scenario: sc, Runs: len(samples), Clock: Virtual, Kinds: map[string]uint64{}}
	if alg == Raft {
		r.Clock = Wall
	}
	if len(samples) == 0 {
		return r
	}
	totals := collect(samples, sample.total)
	r.Messages, r.MessagesMin, r.MessagesMax = median(totals), totals[0], totals[len(totals)-1]
	times := collect(samples, func(s sample) time.Duration { return s.time })
	r.Time, r.TimeMin, r.TimeMax = median(times), times[0], times[len(times)-1]
	r.Detect = median(collect(samples, func(s sample) time.Duration { return s.detect }))
	r.Heartbeats = median(collect(samples, func(s sample) uint64 { return s.heartbeats }))
	for _, k := range kindsOf(alg) {
		if m := median(collect(samples, func(s sample) uint64 { return s.kinds[k] })); m > 0 {
			r.Kinds[k] = m
		}
	}
	return r
}

// collect returns f of every sample, sorted.
func collect[T uint64 | time.Duration](samples []sample, f func(sample) T) []T {
	out := make([]T, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	slices.Sort(out)
	return out
}

// median returns the lower median of sorted values.
func median[T uint64 | time.Duration](sorted []T) T {
	return sorted[(len(sorted)-1)/2]
}

// kindsOf returns the message kinds an algorithm's rows report, in
// column order; classic heartbeats are not among them.
func kindsOf(alg Algorithm) []string {
	if alg == Raft {
		return RaftKinds
	}
	var out []string
	for _, k := range classicAlg(alg).Kinds() {
		if k != heartbeat {
			out = append(out, k.String())
		}
	}
	return out
}

// allKinds returns every kind of the given algorithms, each once, in
// column order.
func allKinds(algs []Algorithm) []string {
	var out []string
	for _, a := range algs {
		for _, k := range kindsOf(a) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}
