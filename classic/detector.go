package classic

// The failure detector the three algorithms share. It is the unreliable
// detector of the Edinburgh lecture, built from two sources:
//
//   - Heartbeats (the "beacon" of the elections slides, 004): a coordinator
//     sends Heartbeat to its members every HeartbeatInterval. A member that
//     has heard nothing from its coordinator for SuspectTimeout suspects it,
//     and its algorithm reacts: ring and bully start an election,
//     invitation leaves the group and forms its own. A node that knows no
//     coordinator and takes part in no election does the same, so a node
//     that missed an announcement does not wait for ever.
//   - Failed sends: a message the network could not deliver (the peer is
//     down or cut off: a refused dial, a reset connection, mux's Drop)
//     marks its destination down for SuspectTimeout. The ring uses the
//     marks to skip a failed successor, the bully to know it is the
//     highest living process; any message from a peer clears its mark.
//
// Suspicion can be wrong in both directions. A slow coordinator is taken
// for dead (a new election, and for ring and bully a second coordinator
// until the old one hears of it); a crashed peer that nobody sends to is
// not marked. Marks expire so that a restarted or reconnected peer is
// tried again.

// heard notes a message from peer from: it is alive, and if it is the
// coordinator, the member's timeout starts again.
func (b *base) heard(from string) {
	delete(b.down, from)
	if b.ok && from == b.coord {
		b.lastHeard = b.env.now()
	}
}

// markDown records that peer p seems to have failed.
func (b *base) markDown(p string) {
	if p != b.self {
		b.down[p] = b.env.now()
	}
}

// isDown reports whether p was marked down within the last SuspectTimeout.
func (b *base) isDown(p string) bool {
	at, ok := b.down[p]
	if !ok {
		return false
	}
	if b.env.now()-at >= b.t.SuspectTimeout {
		delete(b.down, p)
		return false
	}
	return true
}

// armCheck starts the member's timeout; machines call it at boot.
func (b *base) armCheck() {
	b.lastHeard = b.env.now()
	b.arm(timerCheck, b.t.SuspectTimeout)
}

// checkFired handles timerCheck and reports whether the coordinator (or,
// with none known, the lack of one) is now suspected. It re-arms itself
// for the moment the coordinator would next become suspect.
func (b *base) checkFired(t timer) bool {
	if !b.current(t) {
		return false
	}
	now := b.env.now()
	quiet := now - b.lastHeard
	if b.leading() || quiet < b.t.SuspectTimeout {
		b.arm(timerCheck, max(b.t.SuspectTimeout-quiet, b.t.HeartbeatInterval))
		return false
	}
	b.lastHeard = now // suspect once per timeout, not on every check
	b.arm(timerCheck, b.t.SuspectTimeout)
	if b.ok {
		b.markDown(b.coord)
		b.log.Info("coordinator suspected", "coordinator", b.coord)
	}
	return true
}

// heartbeatFired handles timerHeartbeat: a coordinator sends Heartbeat to
// members and re-arms. A node that no longer leads lets it lapse.
func (b *base) heartbeatFired(t timer, members []string) {
	if !b.current(t) || !b.leading() {
		return
	}
	for _, p := range members {
		b.send(p, Message{Kind: KindHeartbeat, ID: b.self, Epoch: b.epoch})
	}
	b.arm(timerHeartbeat, b.t.HeartbeatInterval)
}

// hbAction is what ring and bully do with a heartbeat.
type hbAction uint8

const (
	hbIgnore    hbAction = iota
	hbAdopt              // take the sender as coordinator
	hbChallenge          // a lower process leads: start an election
)

// heartbeatRule decides what a ring or bully node does with a heartbeat
// from a process that is not its coordinator (heard has already refreshed
// the coordinator's). Heartbeats are how two coordinators find out about
// each other once a partition heals, so the rule merges them the bully's
// way: a node not in an election adopts a higher coordinator it had not
// heard of, and challenges a lower one unless its own coordinator outranks
// that one (and will challenge it itself). Heartbeats from an older epoch are
// ignored, so a late heartbeat from a coordinator that has since been
// replaced changes nothing.
func (b *base) heartbeatRule(from string, m Message, electing bool) hbAction {
	b.noteEpoch(m.Epoch)
	switch {
	case b.ok && from == b.coord:
		if m.Epoch > b.epoch {
			b.setView(from, m.Epoch, true)
		}
		return hbIgnore
	case electing || m.Epoch < b.epoch:
		return hbIgnore
	case b.above(from, b.self):
		if !b.ok || m.Epoch > b.epoch || b.above(from, b.coord) {
			return hbAdopt
		}
		return hbIgnore
	case b.ok && b.coord != b.self && b.above(b.coord, from):
		return hbIgnore // my coordinator outranks the sender and hears it too
	default:
		return hbChallenge
	}
}
