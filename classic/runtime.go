package classic

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Node runs one elector for real: the algorithm's state machine, real
// timers, and a Transport to the other nodes. It implements Elector.
//
// Every event (a message, a timer, a report of a lost message, a call to
// Elect) is handled under one lock, one at a time, exactly as the Sim
// feeds the same machine; the Node adds no behaviour of its own.
type Node struct {
	cfg Config
	tr  Transport

	mu      sync.Mutex
	m       machine
	t0      time.Time
	started bool
	closed  bool
	timers  map[*time.Timer]struct{}
	changes chan Change
}

var _ Elector = (*Node)(nil)

// NewNode returns a Node for cfg that talks over tr. It does no I/O; call
// Start.
func NewNode(cfg Config, tr Transport) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tr == nil {
		return nil, fmt.Errorf("%w: Transport is nil", ErrInvalidConfig)
	}
	cfg.Members = slices.Clone(cfg.Members)
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	return &Node{
		cfg:     cfg,
		tr:      tr,
		timers:  make(map[*time.Timer]struct{}),
		changes: make(chan Change, 1),
	}, nil
}

// Start opens the transport and boots the elector as a freshly started
// process of its algorithm: ring and bully start an election, invitation
// forms a group of its own.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return ErrClosed
	case n.started:
		return ErrStarted
	}
	n.started = true
	n.t0 = time.Now()
	n.m = newMachine(n.cfg, nodeEnv{n})
	// Messages that arrive before boot returns wait for the lock.
	if err := n.tr.Open(n.receive, n.undeliverable); err != nil {
		return err
	}
	n.m.boot(Change{})
	return nil
}

// Elect starts an election now, as if the node had found its coordinator
// failed. A node already in an election ignores it.
func (n *Node) Elect() {
	n.step(func(m machine) { m.elect() })
}

// Coordinator implements Elector.
func (n *Node) Coordinator() (string, uint64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		return "", 0, false
	}
	v := n.m.view()
	return v.Coordinator, v.Epoch, v.OK
}

// Changes implements Elector.
func (n *Node) Changes() <-chan Change { return n.changes }

// Stats implements Elector.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		return Stats{Node: n.cfg.ID, Algorithm: n.cfg.Algorithm}
	}
	return n.m.stats()
}

// Close stops the timers, closes the transport and then Changes. It is
// safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	for t := range n.timers {
		t.Stop()
	}
	clear(n.timers)
	n.mu.Unlock()

	err := n.tr.Close() // unblocks transport goroutines waiting for n.mu

	n.mu.Lock()
	close(n.changes)
	n.mu.Unlock()
	return err
}

// step runs f on the machine under the lock, unless the node is not
// running.
func (n *Node) step(f func(machine)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.m == nil {
		return
	}
	f(n.m)
}

func (n *Node) receive(from string, m Message) {
	if from == n.cfg.ID || !slices.Contains(n.cfg.Members, from) {
		return // not a member: nobody this algorithm knows
	}
	n.step(func(mc machine) { mc.receive(from, m) })
}

func (n *Node) undeliverable(to string, m Message) {
	n.step(func(mc machine) { mc.undeliverable(to, m) })
}

// nodeEnv is the machine's world: real time, the transport, and timers.
// Its methods run with n.mu held.
type nodeEnv struct{ n *Node }

func (e nodeEnv) now() time.Duration { return time.Since(e.n.t0) }

func (e nodeEnv) send(to string, m Message) { e.n.tr.Send(to, m) }

func (e nodeEnv) after(d time.Duration, t timer) {
	n := e.n
	var tm *time.Timer
	// The callback takes n.mu, which the caller holds until tm is set.
	tm = time.AfterFunc(d, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.timers, tm)
		if !n.closed {
			n.m.fire(t)
		}
	})
	n.timers[tm] = struct{}{}
}

// changed keeps only the latest view for a slow reader: it never blocks,
// and only this method sends on the channel, under n.mu.
func (e nodeEnv) changed(c Change) {
	ch := e.n.changes
	select {
	case ch <- c:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	ch <- c
}
