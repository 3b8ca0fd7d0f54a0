package lease

import (
	"sync"

	"github.com/lockd/lockd/httpapi/wire"
)

// staleObserve is the state of the unsafe switch ObserveStale: per
// election, the leader a blocking query answered before the current one.
type staleObserve struct {
	mu      sync.Mutex
	answers int
	last    map[string]wire.Election
	older   map[string]wire.Election
}

// staleEvery is how often, in blocking answers, ObserveStale answers
// with an older leader when it has one.
const staleEvery = 3

// answer returns what a blocking query of an election answers when the
// current leader is e: e itself, or, every staleEvery answers, the leader
// answered before e when its token is lower.
func (s *staleObserve) answer(e wire.Election) wire.Election {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.older = map[string]wire.Election{}, map[string]wire.Election{}
	}
	if l, ok := s.last[e.Name]; ok && l.Token != 0 && l.Token != e.Token {
		s.older[e.Name] = l
	}
	if e.Token != 0 {
		s.last[e.Name] = e
	}
	s.answers++
	if o, ok := s.older[e.Name]; ok && s.answers%staleEvery == 0 && o.Token < e.Token {
		return o
	}
	return e
}
