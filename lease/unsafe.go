package lease

import (
	"sync"
	"time"

	"github.com/lockd/lockd/api"
)

// unsafeState is the state of the unsafe switches that need one.
type unsafeState struct {
	observe goBack[api.Election] // ObserveStale
	stale   goBack[api.Lock]     // StaleGoesBack
	lag     lagBehind            // StaleLag
}

// staleLag is how far behind StaleLag keeps ?stale reads.
const staleLag = 5 * time.Second

// lagBehind is the state of StaleLag: per lock, the states the node had,
// with when it first answered each.
type lagBehind struct {
	mu   sync.Mutex
	seen map[string][]lagged
}

type lagged struct {
	at time.Time
	l  api.Lock
}

// answer returns the newest state of name first seen at least staleLag
// before now (the oldest kept if none is that old): it never goes back,
// and stays behind.
func (g *lagBehind) answer(name string, l api.Lock, k uint64, now time.Time) api.Lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string][]lagged{}
	}
	h := g.seen[name]
	if len(h) == 0 || h[len(h)-1].l.ModifyIndex != k {
		h = append(h, lagged{now, l})
	}
	i := 0
	for j := range h {
		if now.Sub(h[j].at) >= staleLag {
			i = j
		}
	}
	h = h[i:] // what is older than the answer is never answered again
	g.seen[name] = h
	return h[0].l
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

func electionToken(e api.Election) uint64 { return e.Token }

func lockIndex(l api.Lock) uint64 { return l.ModifyIndex }
