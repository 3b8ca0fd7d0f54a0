package lease

import (
	"sync"

	"github.com/lockd/lockd/httpapi/wire"
)

// unsafeState is the state of the unsafe switches that need one.
type unsafeState struct {
	observe goBack[wire.Election] // ObserveStale
	stale   goBack[wire.Lock]     // StaleGoesBack
}

// goBack is the state of the unsafe switches that make reads go back
// (ObserveStale, StaleGoesBack): per name, the last answers with a
// distinct, nonzero key (an election's token, a lock's modify index).
type goBack[T any] struct {
	mu      sync.Mutex
	answers int
	seen    map[string][]T
}

// staleEvery is how often, in answers, such a switch answers with an
// older state when it has one.
const staleEvery = 3

// answer returns what is answered when the current state of name is v
// with key k: v itself, or, every staleEvery answers, the state two before
// the last one answered, older than the one in between, which a reader
// has likely seen already.
func (g *goBack[T]) answer(name string, v T, k uint64, key func(T) uint64) T {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string][]T{}
	}
	l := g.seen[name]
	if k != 0 && (len(l) == 0 || key(l[len(l)-1]) != k) {
		l = append(l, v)
		if len(l) > 3 {
			l = l[len(l)-3:]
		}
		g.seen[name] = l
	}
	g.answers++
	if len(l) == 3 && g.answers%staleEvery == 0 && key(l[0]) < key(l[1]) {
		return l[0]
	}
	return v
}

func electionToken(e wire.Election) uint64 { return e.Token }

func lockIndex(l wire.Lock) uint64 { return l.ModifyIndex }
