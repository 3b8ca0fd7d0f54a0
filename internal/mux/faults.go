package mux

import (
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Faults holds one node's fault rules and applies them to every connection
// of its Mux. Rules are keyed by peer name: the node ID a peer sends in its
// connection header, or, for connections this node dials, the ID registered
// for the dialed address with SetPeerAddr (the address itself when none is
// registered). A rule changes the behaviour of open connections at once;
// the package documentation says how the rules judge bytes and compose.
//
// Faults is safe for concurrent use. It exists for tests and the fault
// harness; nothing in it is reachable from a running node but through an
// explicit unsafe flag, which only a build with the lockd_unsafe tag has.
type Faults struct {
	logger *slog.Logger

	mu      sync.Mutex
	rules   map[string]PeerRules          // peers with at least one rule
	refused map[string]Refused            // connections a Drop refused, by peer
	addrs   map[string]string             // dialed address -> peer ID
	conns   map[string]map[*Conn]struct{} // open connections by peer
	// changed is closed and replaced whenever a rule changes, waking dials
	// that wait in a blackhole.
	changed chan struct{}
	closed  bool // the Mux is closed: no new connections

	dialWaiters atomic.Int32 // dials waiting in a blackhole, for tests
}

// newFaults returns an empty rule set.
func newFaults(logger *slog.Logger) *Faults {
	return &Faults{
		logger:  logger,
		rules:   make(map[string]PeerRules),
		refused: make(map[string]Refused),
		addrs:   make(map[string]string),
		conns:   make(map[string]map[*Conn]struct{}),
		changed: make(chan struct{}),
	}
}

// SetPeerAddr records that addr (host:port, exactly as callers pass it to
// Layer.Dial) belongs to the node id, so that dials to addr obey the rules
// set for id. An empty id forgets addr. A connection's peer is fixed when
// it is dialed, so register addresses before dialing.
func (f *Faults) SetPeerAddr(id, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == "" {
		delete(f.addrs, addr)
		return
	}
	f.addrs[addr] = id
}

// peerFor returns the peer name a dial to addr is attributed to.
func (f *Faults) peerFor(addr string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.addrs[addr]; ok {
		return id
	}
	return addr
}

// Set puts rule in force for traffic with peer in dir, replacing the rule
// there; None lifts the rule in that direction only. Setting Drop closes
// every open connection with the peer. Set panics if dir or rule is not one
// of the declared constants, or if rule is Delay, which needs SetDelay (use
// ParseDirection and ParseRule on untrusted input).
func (f *Faults) Set(peer string, dir Direction, rule Rule) {
	if !dir.valid() || !rule.valid() || rule == Delay {
		panic("mux: Faults.Set: invalid direction or rule")
	}
	f.set(peer, dir, rule, 0)
}

// SetDelay puts a Delay of d in force for traffic with peer in dir,
// replacing the rule there. Connections already open are delayed from now
// on, new ones from their first byte. Bytes held under the rule it replaces
// keep their times. SetDelay panics if dir is not valid or d is not
// positive.
func (f *Faults) SetDelay(peer string, dir Direction, d time.Duration) {
	if !dir.valid() || d <= 0 {
		panic("mux: Faults.SetDelay: invalid direction or delay")
	}
	f.set(peer, dir, Delay, d)
}

// set is Set and SetDelay; d is zero unless rule is Delay.
func (f *Faults) set(peer string, dir Direction, rule Rule, d time.Duration) {
	f.mu.Lock()
	next := f.rules[peer]
	if dir&In != 0 {
		next.In, next.InDelay = rule, d
	}
	if dir&Out != 0 {
		next.Out, next.OutDelay = rule, d
	}
	victims, changed := f.applyLocked(peer, next)
	f.mu.Unlock()
	if changed {
		f.logger.Info("fault rule set", "peer", peer, "in", next.In, "out", next.Out,
			"in_delay", next.InDelay, "out_delay", next.OutDelay, "reset_conns", len(victims))
	}
	closeConns(victims)
}

// Heal lifts every rule for peer.
func (f *Faults) Heal(peer string) {
	f.mu.Lock()
	_, changed := f.applyLocked(peer, PeerRules{})
	f.mu.Unlock()
	if changed {
		f.logger.Info("fault rules healed", "peer", peer)
	}
}

// HealAll lifts every rule for every peer.
func (f *Faults) HealAll() {
	f.mu.Lock()
	n := 0
	for peer := range f.rules {
		f.applyLocked(peer, PeerRules{})
		n++
	}
	f.mu.Unlock()
	if n > 0 {
		f.logger.Info("all fault rules healed", "peers", n)
	}
}

// Snapshot returns the rules in force, by peer; peers without a rule are
// left out. The map is a copy the caller owns.
func (f *Faults) Snapshot() map[string]PeerRules {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.rules)
}

// Refused counts the connections with one peer that a Drop rule refused
// since the Mux started: Dials this node attempted, Accepts the peer did.
// Raft sends each request for votes on a connection of its own pool or a
// new one, so a refused dial to a peer marks a round of votes (or any other
// RPC) that found no pooled connection.
type Refused struct {
	Dials   uint64 `json:"dials"`
	Accepts uint64 `json:"accepts"`
}

// Refused returns the counts, by peer; peers never refused are left out.
// The map is a copy the caller owns.
func (f *Faults) Refused() map[string]Refused {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.refused)
}

// countLocked counts one connection with peer refused by a Drop.
func (f *Faults) countLocked(peer string, outbound bool) {
	r := f.refused[peer]
	if outbound {
		r.Dials++
	} else {
		r.Accepts++
	}
	f.refused[peer] = r
}

// applyLocked makes next the rules for peer, pushes them to the peer's open
// connections and wakes waiting dials. It returns the connections to close
// (when a Drop is newly set; the caller closes them after unlocking, since
// Conn.Close takes f.mu) and whether anything changed.
func (f *Faults) applyLocked(peer string, next PeerRules) ([]*Conn, bool) {
	old := f.rules[peer]
	if next == old {
		return nil, false
	}
	if next == (PeerRules{}) {
		delete(f.rules, peer)
	} else {
		f.rules[peer] = next
	}
	close(f.changed)
	f.changed = make(chan struct{})

	reset := (next.In == Drop && old.In != Drop) || (next.Out == Drop && old.Out != Drop)
	var victims []*Conn
	for c := range f.conns[peer] {
		c.setRules(next)
		if reset {
			victims = append(victims, c)
		}
	}
	return victims, true
}

// awaitDial decides whether a dial to peer may go ahead. It returns nil to
// proceed, ErrDropped under Drop, and under Blackhole waits until the rule
// changes, the deadline passes (a timeoutError) or done is closed
// (ErrClosed). A zero deadline waits without limit.
func (f *Faults) awaitDial(peer string, deadline time.Time, done <-chan struct{}) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for {
		f.mu.Lock()
		rule, changed := f.rules[peer].Out, f.changed
		if rule == Drop {
			f.countLocked(peer, true)
		}
		f.mu.Unlock()
		switch rule {
		case None, Delay:
			return nil
		case Drop:
			return ErrDropped
		}
		f.dialWaiters.Add(1)
		select {
		case <-changed:
			f.dialWaiters.Add(-1)
		case <-timeout:
			f.dialWaiters.Add(-1)
			return timeoutError{}
		case <-done:
			f.dialWaiters.Add(-1)
			return ErrClosed
		}
	}
}

// track wraps raw, a connection with peer whose header has been exchanged,
// in a Conn that obeys the rules, and registers it so that later rule
// changes reach it. outbound says this node dialed it. It refuses the
// connection with ErrDropped if a Drop covers the direction it was opened
// in, and with ErrClosed once the Mux is closed; the caller then closes raw.
func (f *Faults) track(raw net.Conn, peer string, outbound bool) (*Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	r := f.rules[peer]
	if (outbound && r.Out == Drop) || (!outbound && r.In == Drop) {
		f.countLocked(peer, outbound)
		return nil, ErrDropped
	}
	c := newConn(raw, peer, f)
	c.setRules(r)
	set := f.conns[peer]
	if set == nil {
		set = make(map[*Conn]struct{})
		f.conns[peer] = set
	}
	set[c] = struct{}{}
	return c, nil
}

// untrack forgets c; Conn.Close calls it.
func (f *Faults) untrack(c *Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.conns[c.remoteID]
	delete(set, c)
	if len(set) == 0 {
		delete(f.conns, c.remoteID)
	}
}

// shutdown refuses new connections and closes every open one; Mux.Close
// calls it. Rules stay as they are, for Snapshot.
func (f *Faults) shutdown() {
	f.mu.Lock()
	f.closed = true
	var all []*Conn
	for _, set := range f.conns {
		for c := range set {
			all = append(all, c)
		}
	}
	f.mu.Unlock()
	closeConns(all)
}

// closeConns closes each connection, ignoring errors: they are being reset.
func closeConns(conns []*Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}
