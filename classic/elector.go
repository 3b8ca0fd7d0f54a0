package classic

import (
	"log/slog"
	"slices"
	"time"
)

// Elector is one node's view of an election algorithm at work. Node
// implements it over a real network.
//
// The coordinator an Elector reports is a belief, not a lease: ring and
// bully can leave two nodes that each believe they lead (a partition, a
// false suspicion), and nothing here fences the old one off. Epochs are
// informational and may repeat across a partition or a restart.
type Elector interface {
	// Coordinator returns the coordinator this node believes in and its
	// epoch (for invitation, the group number; the coordinator's id and
	// the number name the group). ok is false while the node has none,
	// which is the case during an election.
	Coordinator() (id string, epoch uint64, ok bool)
	// Changes returns a channel that receives the node's view each time it
	// changes. It keeps only the latest view for a slow reader, and is
	// closed by Close.
	Changes() <-chan Change
	// Stats returns a snapshot of the node's accounting.
	Stats() Stats
	// Close stops the elector. It is safe to call more than once.
	Close() error
}

// Change is a node's view of the coordinator.
type Change struct {
	// Coordinator is the coordinator's id, "" when OK is false.
	Coordinator string
	// Epoch is the coordinator's epoch, 0 when OK is false.
	Epoch uint64
	// OK reports that the node knows a coordinator.
	OK bool
}

// env is what a machine may do to the world. The driver (Sim or Node)
// implements it; a machine calls it only from inside one of its own
// methods, never concurrently.
type env interface {
	// now returns the time since the node started, virtual in a Sim.
	now() time.Duration
	// send hands m to the network for delivery to peer to. It never
	// blocks and never reports failure at once: a message that cannot be
	// delivered comes back later through machine.undeliverable, or is
	// silently lost.
	send(to string, m Message)
	// after asks for machine.fire(t) once d has passed.
	after(d time.Duration, t timer)
	// changed reports that the node's view changed.
	changed(c Change)
}

// machine is one election algorithm, separated from I/O and time: a state
// machine driven by one event at a time, acting through env. It holds no
// goroutines and reads no clock, so a Sim can run many of them
// deterministically.
type machine interface {
	// boot starts the process. With initial.OK the node starts believing
	// in that coordinator (a cluster that was already running); without,
	// it starts as the algorithm starts a (re)started process.
	boot(initial Change)
	// elect starts an election now, as if the node had found its
	// coordinator failed; a node already in an election ignores it.
	elect()
	// receive handles a message from peer from.
	receive(from string, m Message)
	// fire handles a timer asked for with env.after.
	fire(t timer)
	// suspect is the failure detector reporting that peer has failed.
	suspect(peer string)
	// undeliverable reports that m, sent to peer to, did not arrive.
	undeliverable(to string, m Message)
	// view returns the node's current view.
	view() Change
	// busy reports that the node is taking part in an election.
	busy() bool
	// stats returns a snapshot of the accounting.
	stats() Stats
}

// newMachine returns the machine for cfg.Algorithm; cfg must be valid.
func newMachine(cfg Config, e env) machine {
	switch cfg.Algorithm {
	case Ring:
		r := &ring{}
		r.init(cfg, e)
		return r
	case Invitation:
		v := &invitation{}
		v.init(cfg, e)
		return v
	case Emergent:
		m := &emergent{}
		m.init(cfg, e)
		return m
	default:
		b := &bully{}
		b.init(cfg, e)
		return b
	}
}

// timerKind names what a timer is for.
type timerKind uint8

const (
	timerHeartbeat   timerKind = iota // coordinator: send heartbeats
	timerCheck                        // member: has the coordinator gone quiet?
	timerElected                      // ring: no Elected in time
	timerAnswer                       // bully: T, no Answer in time
	timerCoordinator                  // bully: T', no Coordinator in time
	timerProbe                        // invitation: look for other coordinators
	timerMerge                        // invitation: the rank wait before inviting is over
	timerAccept                       // invitation: stop collecting accepts, send Ready
	timerReady                        // invitation: no Ready in time
	timerSlaveBeat                    // emergent: send slave heartbeats
	timerPool                         // emergent: look at the pool's size
	timerConfirm                      // emergent: the wait for the old master is over
	numTimers
)

// timer identifies one armed timer. Arming a kind again, or disarming it,
// bumps its generation, so a stale timer is recognised when it fires.
type timer struct {
	kind timerKind
	gen  uint64
}

// base is the state and bookkeeping the three machines share: identity and
// order, the current view, timers, the failure detector (detector.go) and
// the counters.
type base struct {
	alg  Algorithm
	self string
	ids  []string // every member, by ascending rank: the ring order
	rank map[string]int
	t    Timing
	env  env
	log  *slog.Logger

	coord    string
	epoch    uint64
	ok       bool
	maxEpoch uint64 // the highest epoch this node has heard of

	gens [numTimers]uint64

	lastHeard time.Duration            // from the coordinator
	down      map[string]time.Duration // peer -> when it was marked down

	electing      bool // for LastElection
	electionStart time.Duration
	counters
}

func (b *base) init(cfg Config, e env) {
	ids, rank, _ := sortByRank(cfg.Members)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	*b = base{
		alg:  cfg.Algorithm,
		self: cfg.ID,
		ids:  ids,
		rank: rank,
		t:    cfg.Timing,
		env:  e,
		log:  log.With("component", "classic", "node", cfg.ID, "algorithm", string(cfg.Algorithm)),
		down: make(map[string]time.Duration),
	}
}

// above reports whether a outranks b.
func (b *base) above(x, y string) bool { return b.rank[x] > b.rank[y] }

// others returns every member but this node, in ring order.
func (b *base) others() []string {
	out := make([]string, 0, len(b.ids)-1)
	for _, id := range b.ids {
		if id != b.self {
			out = append(out, id)
		}
	}
	return out
}

// higher returns the members that outrank this node; lower, the rest.
func (b *base) higher() []string {
	i := slices.Index(b.ids, b.self)
	return b.ids[i+1:]
}

func (b *base) lower() []string {
	i := slices.Index(b.ids, b.self)
	return b.ids[:i]
}

// leading reports whether this node believes it is the coordinator.
func (b *base) leading() bool { return b.ok && b.coord == b.self }

func (b *base) send(to string, m Message) {
	if to == b.self {
		return
	}
	b.sent[m.Kind]++
	b.env.send(to, m)
}

func (b *base) noteEpoch(e uint64) { b.maxEpoch = max(b.maxEpoch, e) }

// arm starts (or restarts) the timer of kind k.
func (b *base) arm(k timerKind, d time.Duration) {
	b.gens[k]++
	b.env.after(d, timer{kind: k, gen: b.gens[k]})
}

// disarm makes the pending timer of kind k, if any, stale.
func (b *base) disarm(k timerKind) { b.gens[k]++ }

// current reports whether t is the latest timer of its kind.
func (b *base) current(t timer) bool { return b.gens[t.kind] == t.gen }

// startElection counts an election this node starts.
func (b *base) startElection() {
	b.started++
	b.joinElection()
	b.log.Debug("election started", "epoch", b.maxEpoch)
}

// joinElection notes that the node now takes part in an election.
func (b *base) joinElection() {
	if !b.electing {
		b.electing = true
		b.electionStart = b.env.now()
	}
}

func (b *base) view() Change {
	if !b.ok {
		return Change{}
	}
	return Change{Coordinator: b.coord, Epoch: b.epoch, OK: true}
}

// setView changes the node's view, reports the change, and starts the
// heartbeats of a new coordinator. A known coordinator ends the node's
// part in an election.
func (b *base) setView(coord string, epoch uint64, ok bool) {
	b.noteEpoch(epoch)
	prev, wasLeading := b.view(), b.leading()
	b.coord, b.epoch, b.ok = coord, epoch, ok
	if ok {
		b.lastHeard = b.env.now()
		if b.electing {
			b.electing = false
			b.lastElection = b.env.now() - b.electionStart
		}
		if b.leading() && !wasLeading {
			b.arm(timerHeartbeat, b.t.HeartbeatInterval)
		}
	}
	next := b.view()
	if next == prev {
		return
	}
	switch {
	case b.leading():
		b.log.Info("became coordinator", "epoch", epoch)
	case ok:
		b.log.Info("coordinator changed", "coordinator", coord, "epoch", epoch)
	default:
		b.log.Debug("no coordinator")
	}
	b.env.changed(next)
}

// baseStats fills in what every machine reports.
func (b *base) baseStats(busy bool) Stats {
	v := b.view()
	return Stats{
		Node:             b.self,
		Algorithm:        b.alg,
		Coordinator:      v.Coordinator,
		Epoch:            v.Epoch,
		OK:               v.OK,
		InElection:       busy,
		ElectionsStarted: b.started,
		LastElection:     b.lastElection,
		Sent:             kindMap(&b.sent),
		Received:         kindMap(&b.recv),
		Lost:             b.lost,
		Suppressed:       b.suppressed,
	}
}
