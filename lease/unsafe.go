package lease

import (
	"sync"

	"github.com/lockd/lockd/httpapi/wire"
)

// staleObserve is the state of the unsafe switch ObserveStale: per
// election, the last leaders (with a token) blocking queries answered.
type staleObserve struct {
	mu      sync.Mutex
	answers int
	seen    map[string][]wire.Election
}

// staleEvery is how often, in blocking answers, ObserveStale answers
// with an older leader when it has one.
const staleEvery = 3

// answer returns what a blocking query of an election answers when the
// current leader is e: e itself, or, every staleEvery answers, the leader
// two before the last one answered, whose token is lower than that of
// the one in between, which an observer has likely seen already.
func (s *staleObserve) answer(e wire.Election) wire.Election {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string][]wire.Election{}
	}
	l := s.seen[e.Name]
	if e.Token != 0 && (len(l) == 0 || l[len(l)-1].Token != e.Token) {
		l = append(l, e)
		if len(l) > 3 {
			l = l[len(l)-3:]
		}
		s.seen[e.Name] = l
	}
	s.answers++
	if len(l) == 3 && s.answers%staleEvery == 0 && l[0].Token < l[1].Token {
		return l[0]
	}
	return e
}
