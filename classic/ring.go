package classic

import "slices"

// ring is Chang and Roberts' ring election, as the seeds teach it.
//
// Processes sit in a logical ring by ascending rank; each sends only to
// its clockwise successor, the next higher rank, and the highest sends to
// the lowest (UIUC CS 425: "p_i has a channel to p_(i+1) mod N; all
// messages are sent clockwise").
//
//   - An initiator marks itself participant and sends Election(own id)
//     (Edinburgh: "changes its state from non-participant to participant").
//   - On Election(j): j above own id, forward it and become participant;
//     j below own id and not yet participant, replace it with own id and
//     forward; j below own id and already participant, swallow it
//     (Edinburgh's participant rule, the UIUC "has not forwarded an
//     election message earlier"); j equal to own id, it has won: become
//     non-participant and send Elected(own id).
//   - On Elected(x): record x as coordinator, become non-participant, and
//     forward unless x is this process (UIUC: "forwards the message unless
//     it is the new coordinator").
//
// With several initiators, the participant rule is what suppresses the
// lower runs: a smaller id dies at the first participant above it, so
// exactly one id comes home and exactly one Elected round is sent. The
// UIUC slides reach the same end with a cache of initiator ids; that cache
// has no era, and after a failure it would suppress the new election, so
// lockd carries the initiator for tracing only.
//
// Failures (UIUC "Fixing for failures", both options): the failure
// detector lets a process skip a failed successor, and a process starts
// the election again when it times out waiting for Elected
// (ElectedTimeout) or learns that the would-be leader has failed. Beyond
// the textbook, a process that is handed an Elected for a lower id than
// its own, or a heartbeat from a lower coordinator, starts an election
// (the run missed it, or a partition healed), so that the highest living
// process ends up coordinator.
//
// Counting: the Election that returns to the winner and the Elected that
// returns to it both count, so a run started by the winner costs 2N
// messages and one started by its successor 3N - 1 (UIUC "Worst-case
// analysis", Edinburgh: "3N - 1 messages").
type ring struct {
	base
	participant bool
	// candidate is the highest id this participant has seen in an
	// Election of the current run: the would-be leader.
	candidate string
}

func (r *ring) boot(initial Change) {
	r.armCheck()
	if initial.OK {
		r.setView(initial.Coordinator, initial.Epoch, true)
		return
	}
	r.initiate()
}

func (r *ring) elect() {
	if !r.participant {
		r.initiate()
	}
}

func (r *ring) busy() bool { return r.participant }

func (r *ring) stats() Stats { return r.baseStats(r.participant) }

// successor returns the first member clockwise from this node that is not
// marked down, or this node itself when every other is.
func (r *ring) successor() string {
	i := slices.Index(r.ids, r.self)
	for k := 1; k < len(r.ids); k++ {
		if p := r.ids[(i+k)%len(r.ids)]; !r.isDown(p) {
			return p
		}
	}
	return r.self
}

// forward sends m to the successor. A node with no living successor is
// alone: its Election has nobody to beat, so it wins.
func (r *ring) forward(m Message) {
	next := r.successor()
	if next != r.self {
		r.send(next, m)
		return
	}
	if m.Kind == KindElection {
		r.win()
	}
}

// initiate starts a run: participant, candidate itself, Election(own id).
func (r *ring) initiate() {
	r.startElection()
	r.participant, r.candidate = false, "" // a fresh run, with a fresh wait
	r.join(r.self)
	r.forward(Message{Kind: KindElection, ID: r.self, Initiator: r.self, Epoch: r.maxEpoch})
}

// join makes the node a participant of the run whose highest id so far is
// candidate.
func (r *ring) join(candidate string) {
	if !r.participant {
		r.participant = true
		r.joinElection()
		r.setView("", r.epoch, false)
		r.arm(timerElected, r.t.ElectedTimeout)
	}
	if r.candidate == "" || r.above(candidate, r.candidate) {
		r.candidate = candidate
	}
}

// leaderFailed reports whether this participant's would-be leader is known
// to have failed.
func (r *ring) leaderFailed() bool {
	return r.participant && (r.candidate == "" || r.isDown(r.candidate))
}

func (r *ring) win() {
	r.participant, r.candidate = false, ""
	r.disarm(timerElected)
	r.setView(r.self, r.maxEpoch+1, true)
	r.forward(Message{Kind: KindElected, ID: r.self, Epoch: r.epoch})
}

func (r *ring) receive(from string, m Message) {
	r.recv[m.Kind]++
	r.heard(from)
	switch m.Kind {
	case KindElection:
		r.onElection(m)
	case KindElected:
		r.onElected(m)
	case KindHeartbeat:
		switch r.heartbeatRule(from, m, r.participant) {
		case hbAdopt:
			r.setView(from, m.Epoch, true)
		case hbChallenge:
			r.initiate()
		}
	}
}

func (r *ring) onElection(m Message) {
	r.noteEpoch(m.Epoch)
	j := m.ID
	switch {
	case j == r.self:
		if !r.participant && r.leading() {
			r.suppressed++ // a copy of a run this node has already won
			return
		}
		r.win()
	case r.isDown(j):
		// The candidate has failed; its Election would circle for ever.
		r.suppressed++
		if (!r.participant && !r.ok) || r.leaderFailed() {
			r.initiate()
		}
	case r.above(j, r.self):
		r.join(j)
		m.Epoch = r.maxEpoch
		r.forward(m)
	case !r.participant:
		r.join(r.self)
		r.forward(Message{Kind: KindElection, ID: r.self, Initiator: m.Initiator, Epoch: r.maxEpoch})
	default:
		r.suppressed++ // Chang-Roberts: a participant swallows a smaller id
	}
}

func (r *ring) onElected(m Message) {
	r.noteEpoch(m.Epoch)
	x := m.ID
	switch {
	case x == r.self:
		// Its own announcement is home: the round is over.
	case r.isDown(x):
		r.suppressed++
		if !r.participant {
			r.initiate() // the new coordinator has already failed
		}
	case r.above(r.self, x):
		// The run missed this node (it was down or cut off): it
		// outranks the winner, so it runs again.
		r.suppressed++
		if !r.participant {
			r.initiate()
		}
	case !r.participant && r.ok && r.coord == x && m.Epoch <= r.epoch:
		r.suppressed++ // a second round for a coordinator already known
	default:
		r.participant, r.candidate = false, ""
		r.disarm(timerElected)
		r.setView(x, m.Epoch, true)
		r.forward(m)
	}
}

func (r *ring) fire(t timer) {
	switch t.kind {
	case timerHeartbeat:
		r.heartbeatFired(t, r.others())
	case timerCheck:
		if r.checkFired(t) && !r.participant {
			r.initiate()
		}
	case timerElected:
		if r.current(t) && r.participant {
			r.log.Info("no Elected in time; starting again")
			r.initiate()
		}
	}
}

func (r *ring) suspect(peer string) {
	r.markDown(peer)
	switch {
	case r.participant && peer == r.candidate:
		r.initiate() // the would-be leader has failed
	case !r.participant && r.ok && peer == r.coord && peer != r.self:
		r.initiate()
	}
}

// undeliverable skips a failed successor: the message goes on to the next
// living one, unless it was for the process it is about, which has failed,
// or the run it belongs to is over here (a late bounce must not start a
// finished round again).
func (r *ring) undeliverable(to string, m Message) {
	r.lost++
	r.markDown(to)
	switch m.Kind {
	case KindElection:
		switch {
		case m.ID == to:
			if r.leaderFailed() {
				r.initiate()
			}
		case r.participant:
			r.forward(m)
		}
	case KindElected:
		switch {
		case m.ID == to:
			if !r.participant {
				r.initiate() // the coordinator it announces has failed
			}
		case r.ok && r.coord == m.ID && r.epoch == m.Epoch:
			r.forward(m)
		}
	}
}
