package classic

// bully is Garcia-Molina's bully algorithm, as the seeds teach it. Every
// process knows every id.
//
//   - A process that finds the coordinator failed and has the highest id
//     among the living (every higher id is suspected by its detector)
//     sends Coordinator to every lower id, and the election is over
//     (UIUC: "if it knows its id is the highest, it elects itself";
//     Edinburgh: "can simply send a coordinator message").
//   - Otherwise it sends Election to every higher id, suspected or not,
//     and waits T (AnswerTimeout). No Answer: it takes the lead and sends
//     Coordinator to every lower id. An Answer: it waits T'
//     (CoordinatorTimeout) for Coordinator, and starts again if none comes
//     (Edinburgh: "initiates another election").
//   - A process that receives Election answers it and starts its own
//     election unless it has one running (UIUC, Edinburgh).
//   - A process that receives Coordinator records its sender as
//     coordinator; a (re)started process starts an election, and if it has
//     the highest id it announces itself even though another coordinator
//     is working (Edinburgh: the restarted process "bullies"). Beyond the
//     textbook, a process that receives Coordinator from a lower id does
//     not record it and starts an election instead, which is the same
//     bullying applied to a stale announcement.
//
// Counting: no failures during the run, the coordinator already failed.
// The second-highest detects it: N - 2 Coordinator messages, nothing else
// (UIUC "Best-case", Edinburgh "just N - 2 coordinator messages"). The
// lowest detects it: each of the N - 1 living processes runs an election,
// the i-th highest sending i - 1 Election messages, N(N-1)/2 in all (UIUC
// "Analysis"); every living process below the second-highest gets one
// Answer from each living process above it, (N-1)(N-2)/2 in all; and the
// second-highest sends N - 2 Coordinator messages. The slides of 004
// count N - 1 Coordinator messages in the worst case (to "all other
// machines"); lockd follows UIUC and Edinburgh, lower ids only.
type bully struct {
	base
	phase bullyPhase
}

type bullyPhase uint8

const (
	bullyIdle                bullyPhase = iota
	bullyAwaitingAnswer                 // sent Election, T running
	bullyAwaitingCoordinator            // got an Answer, T' running
)

func (b *bully) boot(initial Change) {
	b.armCheck()
	if initial.OK {
		b.setView(initial.Coordinator, initial.Epoch, true)
		return
	}
	b.run() // a (re)started process starts an election
}

func (b *bully) elect() {
	if b.phase == bullyIdle {
		b.run()
	}
}

func (b *bully) busy() bool { return b.phase != bullyIdle }

func (b *bully) stats() Stats { return b.baseStats(b.busy()) }

// run starts an election.
func (b *bully) run() {
	b.startElection()
	b.setView("", b.epoch, false)
	if b.highestLiving() {
		b.lead()
		return
	}
	for _, p := range b.higher() {
		b.send(p, Message{Kind: KindElection, ID: b.self, Epoch: b.maxEpoch})
	}
	b.phase = bullyAwaitingAnswer
	b.disarm(timerCoordinator)
	b.arm(timerAnswer, b.t.AnswerTimeout)
}

// highestLiving reports whether every higher id is suspected.
func (b *bully) highestLiving() bool {
	for _, p := range b.higher() {
		if !b.isDown(p) {
			return false
		}
	}
	return true
}

// lead makes this process coordinator and tells every lower id.
func (b *bully) lead() {
	b.phase = bullyIdle
	b.disarm(timerAnswer)
	b.disarm(timerCoordinator)
	b.setView(b.self, b.maxEpoch+1, true)
	for _, p := range b.lower() {
		b.send(p, Message{Kind: KindCoordinator, ID: b.self, Epoch: b.epoch})
	}
}

func (b *bully) receive(from string, m Message) {
	b.recv[m.Kind]++
	b.heard(from)
	b.noteEpoch(m.Epoch)
	switch m.Kind {
	case KindElection:
		if !b.above(b.self, from) {
			return // Election goes to higher ids only
		}
		b.send(from, Message{Kind: KindAnswer, ID: b.self, Epoch: b.maxEpoch})
		if b.phase == bullyIdle {
			b.run()
		}
	case KindAnswer:
		if b.phase == bullyAwaitingAnswer {
			b.phase = bullyAwaitingCoordinator
			b.disarm(timerAnswer)
			b.arm(timerCoordinator, b.t.CoordinatorTimeout)
		}
	case KindCoordinator:
		b.onCoordinator(m)
	case KindHeartbeat:
		switch b.heartbeatRule(from, m, b.busy()) {
		case hbAdopt:
			b.setView(from, m.Epoch, true)
		case hbChallenge:
			b.run()
		}
	}
}

func (b *bully) onCoordinator(m Message) {
	c := m.ID
	if c == b.self {
		return
	}
	if b.above(b.self, c) {
		b.suppressed++ // a lower process claims to lead: bully it
		if b.phase == bullyIdle {
			b.run()
		}
		return
	}
	b.phase = bullyIdle
	b.disarm(timerAnswer)
	b.disarm(timerCoordinator)
	b.setView(c, m.Epoch, true)
}

func (b *bully) fire(t timer) {
	switch t.kind {
	case timerHeartbeat:
		b.heartbeatFired(t, b.others())
	case timerCheck:
		if b.checkFired(t) && b.phase == bullyIdle {
			b.run()
		}
	case timerAnswer:
		if b.current(t) && b.phase == bullyAwaitingAnswer {
			// Edinburgh: "assumes that all higher processes have failed".
			for _, p := range b.higher() {
				b.markDown(p)
			}
			b.lead()
		}
	case timerCoordinator:
		if b.current(t) && b.phase == bullyAwaitingCoordinator {
			b.log.Info("no Coordinator in time; starting again")
			b.run()
		}
	}
}

func (b *bully) suspect(peer string) {
	b.markDown(peer)
	if b.ok && peer == b.coord && peer != b.self && b.phase == bullyIdle {
		b.run()
	}
}

// undeliverable only feeds the detector: the bully relies on its timeouts,
// as taught, and does not cut T short when an Election bounces.
func (b *bully) undeliverable(to string, m Message) {
	b.lost++
	b.markDown(to)
}
