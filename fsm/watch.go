package fsm

import "sync"

// Topic names a part of the state that a blocking query or a queued
// acquire waits to see change (see FSM.Watch). A watcher is woken only by
// entries that change its topic, so the cost of an entry does not grow
// with the number of watchers of other names.
type Topic struct {
	kind     topicKind
	election bool
	name     string
	session  string
}

type topicKind uint8

const (
	topicApplied  topicKind = iota // every entry and every restore
	topicObject                    // one lock or election
	topicSpace                     // any lock, or any election
	topicStanding                  // one session's holding of, or place in the queue of, one object
	topicKey                       // one key of the namespace
	topicPrefix                    // the keys that start with a prefix
)

// AppliedTopic changes with every entry applied, refused ones included,
// and with every restore: the topic of reads whose index is the applied
// index (sessions).
func AppliedTopic() Topic { return Topic{kind: topicApplied} }

// ObjectTopic changes whenever the named lock (or election) changes,
// including when it comes into existence or goes away.
func ObjectTopic(election bool, name string) Topic {
	return Topic{kind: topicObject, election: election, name: name}
}

// SpaceTopic changes whenever any lock (or any election) changes: the
// topic of the list and its index.
func SpaceTopic(election bool) Topic { return Topic{kind: topicSpace, election: election} }

// StandingTopic changes whenever session becomes or stops being a holder
// or a waiter of the named lock (or election): when it is queued, granted,
// lets go, or leaves the queue. Other waiters coming and going do not
// change it.
func StandingTopic(election bool, name, session string) Topic {
	return Topic{kind: topicStanding, election: election, name: name, session: session}
}

// KeyTopic changes whenever the key is put or deleted.
func KeyTopic(key []byte) Topic { return Topic{kind: topicKey, name: string(key)} }

// PrefixTopic changes whenever a key that starts with prefix is put or
// deleted; the empty prefix, whenever any key is.
func PrefixTopic(prefix []byte) Topic { return Topic{kind: topicPrefix, name: string(prefix)} }

// watchers holds one channel per watched topic; the entry that changes the
// topic closes it and forgets it.
type watchers struct {
	mu sync.Mutex
	m  map[Topic]*watch
	// prefixLens counts the watched prefix topics by the length of their
	// prefix: a change of a key looks up only the prefixes of the key of
	// those lengths, whatever the number of watchers and keys.
	prefixLens map[int]int
}

type watch struct {
	ch   chan struct{}
	refs int
}

// Watch returns a channel that the first Apply, ApplyCommand or Restore
// after the call that changes t closes, and a function that gives the
// channel up (call it when done waiting, whether or not it was closed).
// A caller watches first, then reads the state, then waits on the channel,
// so that no change can slip in between.
func (f *FSM) Watch(t Topic) (<-chan struct{}, func()) {
	w := &f.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[Topic]*watch)
	}
	e := w.m[t]
	if e == nil {
		e = &watch{ch: make(chan struct{})}
		w.m[t] = e
		w.counted(t, 1)
	}
	e.refs++
	return e.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.m[t] != e {
			return // closed already
		}
		if e.refs--; e.refs == 0 {
			delete(w.m, t)
			w.counted(t, -1)
		}
	}
}

// counted counts a prefix topic in (d = 1) or out (d = -1) of prefixLens.
func (w *watchers) counted(t Topic, d int) {
	if t.kind != topicPrefix {
		return
	}
	if w.prefixLens == nil {
		w.prefixLens = make(map[int]int)
	}
	if w.prefixLens[len(t.name)] += d; w.prefixLens[len(t.name)] == 0 {
		delete(w.prefixLens, len(t.name))
	}
}

// Changed returns a channel that is closed by the next Apply, ApplyCommand
// or Restore, refused commands included. It suits a single loop that looks
// at the whole state after every entry; a blocking query watches its own
// topic instead (Watch).
func (f *FSM) Changed() <-chan struct{} {
	ch, _ := f.Watch(AppliedTopic())
	return ch // AppliedTopic is closed by the very next entry: nothing lingers
}

// notify wakes the watchers of every topic in touched, and of
// AppliedTopic.
func (w *watchers) notify(touched []Topic) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fire(AppliedTopic())
	for _, t := range touched {
		w.fire(t)
		if t.kind != topicKey {
			continue
		}
		for n := range w.prefixLens {
			if n <= len(t.name) {
				w.fire(Topic{kind: topicPrefix, name: t.name[:n]})
			}
		}
	}
}

func (w *watchers) fire(t Topic) {
	if e, ok := w.m[t]; ok {
		close(e.ch)
		delete(w.m, t)
		w.counted(t, -1)
	}
}

// notifyAll wakes every watcher: a restore may have changed anything.
func (w *watchers) notifyAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, e := range w.m {
		close(e.ch)
		delete(w.m, t)
	}
	clear(w.prefixLens)
}

// touch records that the entry being applied changed t.
func (s *space) touch(t Topic) {
	*s.touched = append(*s.touched, t)
}

// Standing tells where session stands on the named lock (election, if
// election is set): its token if it holds it, or whether it is queued. It
// copies nothing, so a queued acquire can look after every change of its
// StandingTopic at a cost that does not grow with the queue.
func (f *FSM) Standing(election bool, name, session string) (token uint64, held, queued bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.st.space(election)
	if has(s.held, session, name) {
		l, _ := s.objs.get(name)
		return l.Holders[l.holder(session)].Token, true, false
	}
	return 0, false, has(s.waiting, session, name)
}

// space returns the locks, or with election set the elections.
func (st *state) space(election bool) *space {
	if election {
		return st.elections
	}
	return st.locks
}
