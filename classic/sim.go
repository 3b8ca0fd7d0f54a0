package classic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// SimConfig configures a Sim.
type SimConfig struct {
	// Algorithm is the algorithm every node runs.
	Algorithm Algorithm
	// N is the number of nodes, named n1..nN (rank = the number).
	N int
	// Seed drives every random choice of the network: delays and drops.
	// The same config and the same calls give the same run.
	Seed uint64
	// MinDelay and MaxDelay bound the one-way delay of a message, drawn
	// uniformly for each. Each pair of nodes is FIFO, as a TCP connection
	// is: a message never overtakes an earlier one on the same link.
	MinDelay, MaxDelay time.Duration
	// DropRate is the probability that a message is silently lost.
	DropRate float64
	// Coordinator, if set, is the coordinator every node believes in at
	// time zero, with epoch 1 (for invitation, one group of all nodes):
	// a cluster that was already running. Empty: every node boots as a
	// freshly started process of its algorithm (ring and bully start an
	// election, invitation forms a group of its own).
	Coordinator string
	// Crashed lists nodes that are down at time zero (they never boot;
	// Restart brings them up).
	Crashed []string
	// Timing holds the algorithms' timeouts.
	Timing Timing
	// Pool configures the emergent algorithm's slave pool. With
	// Coordinator set, the Pool.Lower highest-ranked other nodes start as
	// slaves and the rest as idle.
	Pool Pool
}

// DefaultSimConfig returns n nodes running alg on a LAN-like network: one-
// way delays of 1 to 10ms, no drops, DefaultTiming.
func DefaultSimConfig(alg Algorithm, n int, seed uint64) SimConfig {
	return SimConfig{
		Algorithm: alg,
		N:         n,
		Seed:      seed,
		MinDelay:  time.Millisecond,
		MaxDelay:  10 * time.Millisecond,
		Timing:    DefaultTiming(),
		Pool:      DefaultPool(),
	}
}

// Validate names the first bound the config breaks.
func (c SimConfig) Validate() error {
	switch {
	case !c.Algorithm.valid():
		return fmt.Errorf("%w: %w %q", ErrInvalidConfig, ErrUnknownAlgorithm, c.Algorithm)
	case c.N < 1:
		return fmt.Errorf("%w: N must be at least 1, got %d", ErrInvalidConfig, c.N)
	case c.MinDelay <= 0 || c.MaxDelay < c.MinDelay:
		return fmt.Errorf("%w: want 0 < MinDelay <= MaxDelay, got %v and %v", ErrInvalidConfig, c.MinDelay, c.MaxDelay)
	case c.DropRate < 0 || c.DropRate >= 1:
		return fmt.Errorf("%w: DropRate must be in [0, 1), got %v", ErrInvalidConfig, c.DropRate)
	}
	for _, id := range append([]string{c.Coordinator}, c.Crashed...) {
		if id != "" && !validSimID(id, c.N) {
			return fmt.Errorf("%w: %w %q", ErrInvalidConfig, ErrUnknownNode, id)
		}
	}
	if c.Algorithm == Emergent {
		if err := c.Pool.Validate(); err != nil {
			return err
		}
	}
	return c.Timing.Validate()
}

// SimID returns the id of the i-th node of a Sim ("n3").
func SimID(i int) string { return "n" + strconv.Itoa(i) }

func validSimID(id string, n int) bool {
	r, err := Rank(id)
	return err == nil && r >= 1 && r <= n && id == SimID(r)
}

// Sim is a deterministic in-memory network of electors: every node's
// machine, a virtual clock, and a seeded random source for delays and
// drops. It runs no goroutines and never sleeps; a run of thousands of
// messages takes microseconds of virtual-time bookkeeping each.
//
// The network model: a message to a node that is down, or on the other
// side of a partition, is lost when it is sent, and the sender learns it
// one delay later (a refused dial or a reset, as over TCP); it reaches the
// sender's failure detector through machine.undeliverable. A message in
// flight when its destination crashes, or when a partition cuts its link,
// is lost without a word, and so is a message the DropRate picks. A node
// that crashes loses its state and its timers; messages it had sent still
// arrive. Restart boots a fresh process.
//
// Drive it from code: schedule steps with At, or call Crash, Restart,
// Partition, Heal, Elect and Suspect between calls to Run, RunUntil and
// Settle. Methods that take a node id panic if it is not a member: a
// scenario that names a node that does not exist is a bug in the
// scenario. A Sim is not safe for concurrent use.
type Sim struct {
	cfg   SimConfig
	rng   *rand.Rand
	now   time.Duration
	seq   uint64
	queue eventQueue
	ids   []string
	nodes map[string]*simNode
	group map[string]int // partition side; absent = side 0

	lastAt map[[2]string]time.Duration // FIFO links
	sent   [numKinds]uint64
	// inflight counts election messages (all but heartbeats) and their
	// bounces not yet handled; hbFrom counts (master) heartbeats in
	// flight by sender. Settled needs both quiet. Slave heartbeats are
	// in neither: they never stop.
	inflight int
	hbFrom   map[string]int
}

type simNode struct {
	id  string
	up  bool
	inc uint64 // incarnation: bumped by Crash and Restart
	m   machine
}

// NewSim builds the network and boots every node not in cfg.Crashed at
// virtual time zero.
func NewSim(cfg SimConfig) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sim{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x636c6173736963)),
		nodes:  make(map[string]*simNode, cfg.N),
		group:  make(map[string]int),
		lastAt: make(map[[2]string]time.Duration),
		hbFrom: make(map[string]int),
	}
	for i := 1; i <= cfg.N; i++ {
		id := SimID(i)
		s.ids = append(s.ids, id)
		s.nodes[id] = &simNode{id: id}
	}
	initial := Change{}
	if cfg.Coordinator != "" {
		initial = Change{Coordinator: cfg.Coordinator, Epoch: 1, OK: true}
	}
	for _, id := range s.ids {
		if !slices.Contains(cfg.Crashed, id) {
			s.boot(s.nodes[id], initial)
		}
	}
	return s, nil
}

func (s *Sim) boot(n *simNode, initial Change) {
	n.up = true
	n.inc++
	cfg := Config{ID: n.id, Members: s.ids, Algorithm: s.cfg.Algorithm, Timing: s.cfg.Timing, Pool: s.cfg.Pool,
		Seed: s.cfg.Seed ^ n.inc<<40 ^ 0x656d657267656e74}
	n.m = newMachine(cfg, &simEnv{sim: s, id: n.id, inc: n.inc})
	n.m.boot(initial)
}

// IDs returns every node's id, in ring order.
func (s *Sim) IDs() []string { return slices.Clone(s.ids) }

// Now returns the virtual time.
func (s *Sim) Now() time.Duration { return s.now }

// Up reports whether node id is running.
func (s *Sim) Up(id string) bool {
	n := s.nodes[id]
	return n != nil && n.up
}

// Living returns the running nodes, in ring order.
func (s *Sim) Living() []string {
	var out []string
	for _, id := range s.ids {
		if s.nodes[id].up {
			out = append(out, id)
		}
	}
	return out
}

// node returns node id, panicking on an id that is not a member.
func (s *Sim) node(id string) *simNode {
	n, ok := s.nodes[id]
	if !ok {
		panic(fmt.Sprintf("classic: Sim: %v %q", ErrUnknownNode, id))
	}
	return n
}

// At schedules f to run at virtual time t (at once if t has passed).
// Events due at the same time run in the order they were scheduled.
func (s *Sim) At(t time.Duration, f func()) {
	s.push(simEvent{at: max(t, s.now), kind: evAction, fn: f})
}

// Crash stops node id: its state and timers are gone.
func (s *Sim) Crash(id string) {
	n := s.node(id)
	if n.up {
		n.up, n.m = false, nil
		n.inc++
	}
}

// Restart boots node id afresh, as a restarted process of its algorithm.
// A node that is up is crashed first.
func (s *Sim) Restart(id string) {
	s.Crash(id)
	s.boot(s.node(id), Change{})
}

// Partition cuts the network into the given sides; nodes not listed form
// one more side together. It replaces any earlier partition.
func (s *Sim) Partition(sides ...[]string) {
	clear(s.group)
	for i, side := range sides {
		for _, id := range side {
			s.node(id)
			s.group[id] = i + 1
		}
	}
}

// Heal removes the partition.
func (s *Sim) Heal() { clear(s.group) }

func (s *Sim) cut(a, b string) bool { return s.group[a] != s.group[b] }

// Elect makes node id start an election now, as if it had found its
// coordinator failed ("any process can call for an election").
func (s *Sim) Elect(id string) {
	if n := s.node(id); n.up {
		n.m.elect()
	}
}

// Suspect makes node at's failure detector report peer failed now.
func (s *Sim) Suspect(at, peer string) {
	s.node(peer)
	if n := s.node(at); n.up {
		n.m.suspect(peer)
	}
}

// View returns node id's view; a down node has none.
func (s *Sim) View(id string) Change {
	if n := s.node(id); n.up {
		return n.m.view()
	}
	return Change{}
}

// Stats returns node id's stats since it last booted; a down node's are
// zero but for its id.
func (s *Sim) Stats(id string) Stats {
	if n := s.node(id); n.up {
		return n.m.stats()
	}
	return Stats{Node: id, Algorithm: s.cfg.Algorithm}
}

// Sent returns the messages sent by all nodes since time zero, by kind,
// crashed and restarted nodes included.
func (s *Sim) Sent() map[Kind]uint64 { return kindMap(&s.sent) }

// Coordinators returns the running nodes that believe they are the
// coordinator, in ring order. More than one is a split brain (or, for
// invitation, one per group).
func (s *Sim) Coordinators() []string {
	var out []string
	for _, id := range s.Living() {
		if v := s.nodes[id].m.view(); v.OK && v.Coordinator == id {
			out = append(out, id)
		}
	}
	return out
}

// Agreement reports whether the given running nodes (every running node
// if none are given) all know the same coordinator and epoch and take
// part in no election, and returns that view.
func (s *Sim) Agreement(ids ...string) (Change, bool) {
	if len(ids) == 0 {
		ids = s.Living()
	}
	var first Change
	for i, id := range ids {
		n := s.node(id)
		if !n.up || n.m.busy() {
			return Change{}, false
		}
		v := n.m.view()
		if !v.OK || (i > 0 && v != first) {
			return Change{}, false
		}
		first = v
	}
	return first, len(ids) > 0
}

// Settled reports whether the run is over: every running node agrees on a
// coordinator that is running, no election message is in flight, and no
// heartbeat from anyone but that coordinator is.
func (s *Sim) Settled() bool {
	if s.inflight > 0 {
		return false
	}
	v, ok := s.Agreement()
	if !ok || !s.Up(v.Coordinator) {
		return false
	}
	for from, n := range s.hbFrom {
		if n > 0 && from != v.Coordinator {
			return false
		}
	}
	return true
}

// Run advances virtual time by d, handling every event due by then.
func (s *Sim) Run(d time.Duration) {
	end := s.now + d
	for len(s.queue) > 0 && s.queue[0].at <= end {
		s.step()
	}
	s.now = end
}

// RunUntil handles events until cond holds (checked before the first
// event and after each) or limit of virtual time has passed. It returns
// the virtual time it stopped at and whether cond held. It always stops:
// the limit bounds it even though heartbeats never end.
func (s *Sim) RunUntil(cond func() bool, limit time.Duration) (time.Duration, bool) {
	end := s.now + limit
	if cond() {
		return s.now, true
	}
	for len(s.queue) > 0 && s.queue[0].at <= end {
		s.step()
		if cond() {
			return s.now, true
		}
	}
	s.now = end
	return s.now, false
}

// Settle runs until Settled, for at most limit. The time it returns is
// the time to agreement.
func (s *Sim) Settle(limit time.Duration) (time.Duration, bool) {
	return s.RunUntil(s.Settled, limit)
}

// delay draws a one-way delay.
func (s *Sim) delay() time.Duration {
	span := s.cfg.MaxDelay - s.cfg.MinDelay
	if span == 0 {
		return s.cfg.MinDelay
	}
	return s.cfg.MinDelay + time.Duration(s.rng.Int64N(int64(span)+1))
}

// send puts m on the network from node from to node to.
func (s *Sim) send(from string, inc uint64, to string, m Message) {
	s.sent[m.Kind]++
	hb := m.Kind.heartbeat()
	if !s.nodes[to].up || s.cut(from, to) {
		if !hb {
			s.inflight++
		}
		s.push(simEvent{at: s.now + s.delay(), kind: evBounce, to: from, from: to, msg: m, inc: inc})
		return
	}
	if s.cfg.DropRate > 0 && s.rng.Float64() < s.cfg.DropRate {
		return
	}
	at := s.now + s.delay()
	link := [2]string{from, to}
	at = max(at, s.lastAt[link])
	s.lastAt[link] = at
	if m.Kind == KindHeartbeat {
		s.hbFrom[from]++
	} else if !hb {
		s.inflight++
	}
	s.push(simEvent{at: at, kind: evDeliver, to: to, from: from, msg: m})
}

// step handles the next event.
func (s *Sim) step() {
	e := s.queue.pop()
	s.now = e.at
	switch e.kind {
	case evAction:
		e.fn()
	case evDeliver:
		if e.msg.Kind == KindHeartbeat {
			s.hbFrom[e.from]--
		} else if !e.msg.Kind.heartbeat() {
			s.inflight--
		}
		if n := s.nodes[e.to]; n.up && !s.cut(e.from, e.to) {
			n.m.receive(e.from, e.msg)
		}
	case evBounce:
		if !e.msg.Kind.heartbeat() {
			s.inflight--
		}
		if n := s.nodes[e.to]; n.up && n.inc == e.inc {
			n.m.undeliverable(e.from, e.msg)
		}
	case evTimer:
		if n := s.nodes[e.to]; n.up && n.inc == e.inc {
			n.m.fire(e.timer)
		}
	}
}

func (s *Sim) push(e simEvent) {
	s.seq++
	e.seq = s.seq
	s.queue.push(e)
}

// simEnv is one incarnation of one node's view of the Sim.
type simEnv struct {
	sim *Sim
	id  string
	inc uint64
}

func (e *simEnv) now() time.Duration { return e.sim.now }

func (e *simEnv) send(to string, m Message) { e.sim.send(e.id, e.inc, to, m) }

func (e *simEnv) after(d time.Duration, t timer) {
	e.sim.push(simEvent{at: e.sim.now + d, kind: evTimer, to: e.id, inc: e.inc, timer: t})
}

func (e *simEnv) changed(Change) {}

// simEvent is one thing that happens at a virtual time.
type simEvent struct {
	at    time.Duration
	seq   uint64 // ties broken by scheduling order
	kind  evKind
	to    string // the node it happens to (for a bounce, the sender)
	from  string // the other end (for a bounce, the unreachable peer)
	msg   Message
	inc   uint64
	timer timer
	fn    func()
}

type evKind uint8

const (
	evAction evKind = iota
	evDeliver
	evBounce
	evTimer
)

// eventQueue is a binary min-heap by (at, seq).
type eventQueue []simEvent

func (q eventQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(e simEvent) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() simEvent {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = simEvent{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
