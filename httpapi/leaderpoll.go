package httpapi

import (
	"sync"
	"time"
)

// leaderPoll watches this node's view of the leader for every forwarded
// request in flight at once (watchLeader): one poll per interval, instead
// of a ticker per request, which with thousands of watches held through a
// follower cost it a third of its CPU in wake-ups (BENCHMARKS.md,
// "100,000 keys, 10,000 watchers"). It runs only while a request waits on
// it, and wakes the waiters when the view it polls changed, and at every
// tick while no leader is known (so that each can measure how long).
type leaderPoll struct {
	leader   func() (bool, LeaderAddr)
	interval time.Duration

	mu      sync.Mutex
	ch      chan struct{} // closed at the next wake-up; nil until asked for
	waiters int
	running bool
	last    leaderView
}

// leaderView is what a poll saw.
type leaderView struct {
	isLeader bool
	to       LeaderAddr
}

func (p *leaderPoll) view() leaderView {
	is, to := p.leader()
	return leaderView{is, to}
}

// join registers a waiter, starting the poll if it is not running; the
// waiter calls leave when it stops waiting.
func (p *leaderPoll) join() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiters++
	if !p.running {
		p.running = true
		p.last = p.view()
		go p.run()
	}
}

func (p *leaderPoll) leave() {
	p.mu.Lock()
	p.waiters--
	p.mu.Unlock()
}

// next returns a channel closed at the next wake-up. A waiter takes it
// before it reads the view itself, so that no change between its read and
// its wait goes unseen.
func (p *leaderPoll) next() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
	return p.ch
}

// run polls every interval until a tick finds nobody waiting.
func (p *leaderPoll) run() {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for range t.C {
		v := p.view()
		p.mu.Lock()
		if p.waiters == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		if v != p.last || !v.to.Known() {
			p.last = v
			if p.ch != nil {
				close(p.ch)
				p.ch = nil
			}
		}
		p.mu.Unlock()
	}
}
