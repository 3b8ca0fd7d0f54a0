package load

import (
	"slices"
	"time"
)

// samples are one worker's latencies; workers keep their own and merge at
// the end, so recording takes no lock.
type samples []time.Duration

// Latency summarises latencies.
type Latency struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

func summarise(all []samples) (Latency, int) {
	var merged []time.Duration
	for _, s := range all {
		merged = append(merged, s...)
	}
	if len(merged) == 0 {
		return Latency{}, 0
	}
	slices.Sort(merged)
	at := func(q float64) time.Duration {
		i := int(q * float64(len(merged)-1))
		return merged[i]
	}
	return Latency{P50: at(0.50), P99: at(0.99), Max: merged[len(merged)-1]}, len(merged)
}
