package classic

import (
	"math/rand/v2"
	"slices"
	"time"
)

// emergent is the emergent election (R. J. Anthony, ICAC 2004, as the
// elections lecture of 004 presents it). Every node is in one of four
// states:
//
//   - master: coordinates, and sends Heartbeat to every other node each
//     HeartbeatInterval.
//   - slave: watches the master's heartbeats, and sends SlaveHeartbeat to
//     every other node each Pool.SlaveHeartbeatInterval while listening to
//     the other slaves'. Only slaves take part in elections.
//   - candidate: a slave in an election.
//   - idle: listens to the slave heartbeats (and to the master's, to know
//     the master) and sends nothing at all.
//
// The pool. A node counts the slaves it has heard within
// Pool.SlaveTimeout (itself included when it is one). An idle node that
// counts fewer than Pool.Lower promotes itself to slave; a slave that
// counts more than Pool.Upper demotes itself to idle, and then only if it
// is among the lowest-ranked of the surplus, so that the surplus leaves
// and no more. Neither acts at once: the condition must have held for the
// node's own trigger time, drawn at random in [0, Pool.TriggerJitter] at
// boot and after each of its transitions, so that one idle node promotes
// itself, its slave heartbeats reach the others, and they find the pool
// full again before their own trigger times are up. A (re)started node
// boots idle and listens for Pool.SlaveTimeout before it judges the pool.
// Candidates keep sending slave heartbeats; the master sends none, and a
// node that hears a master heartbeat from a slave stops counting it.
//
// The election. A slave that has heard no master heartbeat for
// SuspectTimeout becomes a candidate and runs the bully among the slaves
// it counts: Election to each higher-ranked one, an Answer from any of
// them hands the election over (a slave that receives Election answers
// it and runs its own), no Answer within AnswerTimeout makes it the
// winner, and it sends Coordinator to the lower-ranked ones. The winner
// and the candidates that heard from it then wait
// Pool.MissedHeartbeats heartbeat intervals more; a master heartbeat in
// that time (the old master was only slow) ends the election with the old
// master still in place. Otherwise the winner takes over: it becomes
// master with a new epoch and heartbeats at once, and the candidates and
// idle nodes adopt it from its first heartbeat. A candidate that hears no
// Coordinator within CoordinatorTimeout, or no heartbeat from the winner
// within the wait and a SuspectTimeout, starts again. Idle nodes never
// take part: they ignore Election and Coordinator, send nothing, and drop
// their view of a master that has been silent for SuspectTimeout.
//
// Why the bully and not the ring among the slaves: every slave knows the
// others from their heartbeats, and the bully needs nothing more than
// that set and the ranks. A ring would need every candidate to agree on
// the successor of each, and the pool changes under it (promotions,
// demotions); a missing or extra member breaks the ring's round trip,
// while the bully only sends to fewer or more higher ranks. The pool is
// small, so the bully's worst case, quadratic in the number of
// participants, stays a few dozen messages however many idle nodes there
// are.
//
// Masters meet after a partition heals through their heartbeats: a master
// that hears another master of a higher epoch, or of the same epoch and a
// higher rank, steps down to slave; a slave or idle node adopts such a
// master the same way. A restarted node never bullies its way in: it
// boots idle.
//
// Counting: with the pool at S slaves, the master gone and the
// highest-ranked slave first to notice, the election costs S - 1
// Coordinator messages; with the lowest first, the bully's worst case
// among S processes, S(S-1)/2 Election, as many Answers and S - 1
// Coordinator messages (unlike the textbook case, the dead process is not
// among the participants: every slave that receives Election answers). Neither depends on the number of idle
// nodes. Normal operation costs, per second, (N-1)/HeartbeatInterval
// master heartbeats as for the other algorithms, plus
// S(N-1)/Pool.SlaveHeartbeatInterval slave heartbeats.
type emergent struct {
	base
	pool Pool
	rng  *rand.Rand

	role  Role
	phase emPhase

	// The election: the master whose silence started it, and for the
	// winner and its followers, who won and with which epoch.
	oldEpoch     uint64
	winner       string
	winnerEpoch  uint64
	slaves       map[string]time.Duration // slave -> its last heartbeat
	trigger      time.Duration            // this node's current trigger time
	since        time.Duration            // when the pool condition began to hold; -1: it does not
	listenUntil  time.Duration            // no pool transition before
	poolAt       time.Duration            // when timerPool is due; -1: not armed
	sentByRole   [numRoles][numKinds]uint64
	confirmDelay time.Duration
}

// Role is an emergent node's state.
type Role uint8

// The roles of the emergent algorithm.
const (
	RoleIdle Role = iota
	RoleSlave
	RoleCandidate
	RoleMaster
	numRoles
)

var roleNames = [numRoles]string{"idle", "slave", "candidate", "master"}

// String returns the role's name ("slave").
func (r Role) String() string {
	if r >= numRoles {
		return "unknown"
	}
	return roleNames[r]
}

type emPhase uint8

const (
	emNone           emPhase = iota
	emAwaitingAnswer         // sent Election, T running
	emAwaitingCoord          // got an Answer, T' running
	emConfirming             // won; waiting for the old master before taking over
	emFollowing              // got Coordinator; waiting for the winner's heartbeat
)

func (e *emergent) init(cfg Config, env env) {
	e.base.init(cfg, env)
	e.pool = cfg.Pool
	e.rng = rand.New(rand.NewPCG(cfg.Seed, uint64(e.rank[e.self]))) //nolint:gosec // G115: a rank is the non-negative number an id ends in (Rank)
	e.slaves = make(map[string]time.Duration)
	e.since, e.poolAt = -1, -1
	e.confirmDelay = time.Duration(e.pool.MissedHeartbeats) * e.t.HeartbeatInterval
	e.drawTrigger()
}

func (e *emergent) drawTrigger() {
	e.trigger = time.Duration(e.rng.Int64N(int64(e.pool.TriggerJitter) + 1))
}

// send counts m by the role the node has now, then sends it.
func (e *emergent) send(to string, m Message) {
	if to == e.self {
		return
	}
	e.sentByRole[e.role][m.Kind]++
	e.base.send(to, m)
}

func (e *emergent) boot(initial Change) {
	now := e.env.now()
	e.armCheck()
	if !initial.OK {
		e.role = RoleIdle
		e.listenUntil = now + e.pool.SlaveTimeout
		e.poolCheck()
		return
	}
	// A cluster that was already running: the coordinator is master, the
	// Pool.Lower highest ranks below it are slaves, the rest idle, and
	// every node has heard every slave.
	var slaves []string
	for i := len(e.ids) - 1; i >= 0 && len(slaves) < e.pool.Lower; i-- {
		if id := e.ids[i]; id != initial.Coordinator {
			slaves = append(slaves, id)
		}
	}
	for _, id := range slaves {
		if id != e.self {
			e.slaves[id] = now
		}
	}
	e.listenUntil = now
	switch {
	case initial.Coordinator == e.self:
		e.becomeMaster(initial.Epoch)
	case slices.Contains(slaves, e.self):
		e.setView(initial.Coordinator, initial.Epoch, true)
		e.becomeSlave()
	default:
		e.role = RoleIdle
		e.setView(initial.Coordinator, initial.Epoch, true)
		e.poolCheck()
	}
}

func (e *emergent) elect() {
	if e.role == RoleSlave {
		e.run()
	}
}

func (e *emergent) busy() bool { return e.role == RoleCandidate }

func (e *emergent) stats() Stats {
	st := e.baseStats(e.busy())
	st.Role = e.role.String()
	st.Slaves, _ = e.countPool()
	st.SentByRole = make(map[string]map[Kind]uint64)
	for r := range numRoles {
		if m := kindMap(&e.sentByRole[r]); len(m) > 0 {
			st.SentByRole[r.String()] = m
		}
	}
	return st
}

// becomeMaster takes over with epoch and heartbeats at once.
func (e *emergent) becomeMaster(epoch uint64) {
	e.role, e.phase = RoleMaster, emNone
	e.disarm(timerSlaveBeat)
	e.disarm(timerAnswer)
	e.disarm(timerCoordinator)
	e.disarm(timerConfirm)
	e.setView(e.self, epoch, true) // arms timerHeartbeat
	e.masterBeat()
	e.poolCheck()
}

// becomeSlave makes the node a slave that is in no election, and
// announces it.
func (e *emergent) becomeSlave() {
	was := e.role
	e.role, e.phase = RoleSlave, emNone
	e.disarm(timerAnswer)
	e.disarm(timerCoordinator)
	e.disarm(timerConfirm)
	if was == RoleIdle || was == RoleMaster {
		e.slaveBeat()
	}
	if was == RoleIdle {
		e.lastHeard = e.env.now() // give the master a SuspectTimeout
	}
	e.poolCheck()
}

func (e *emergent) masterBeat() {
	for _, p := range e.others() {
		e.send(p, Message{Kind: KindHeartbeat, ID: e.self, Epoch: e.epoch})
	}
}

// slaveBeat sends a slave heartbeat to every other node and re-arms.
func (e *emergent) slaveBeat() {
	for _, p := range e.others() {
		e.send(p, Message{Kind: KindSlaveHeartbeat, ID: e.self, Epoch: e.maxEpoch})
	}
	e.arm(timerSlaveBeat, e.pool.SlaveHeartbeatInterval)
}

// inPool reports whether the node counts itself a slave.
func (e *emergent) inPool() bool { return e.role == RoleSlave || e.role == RoleCandidate }

// countPool returns the slaves this node counts, in rank order, and the
// earliest moment one of them stops being counted (-1 if none will).
func (e *emergent) countPool() ([]string, time.Duration) {
	now := e.env.now()
	var out []string
	expiry := time.Duration(-1)
	for _, id := range e.ids {
		if id == e.self {
			if e.inPool() {
				out = append(out, id)
			}
			continue
		}
		at, ok := e.slaves[id]
		if !ok {
			continue
		}
		if now-at >= e.pool.SlaveTimeout {
			delete(e.slaves, id)
			continue
		}
		if e.isDown(id) {
			continue
		}
		out = append(out, id)
		if x := at + e.pool.SlaveTimeout; expiry < 0 || x < expiry {
			expiry = x
		}
	}
	return out, expiry
}

// poolCheck looks at the pool's size, moves the node if the pool has been
// out of its limits for the node's trigger time, and arms timerPool for
// the next moment the answer could change.
func (e *emergent) poolCheck() {
	now := e.env.now()
	pool, expiry := e.countPool()
	want := false
	switch e.role {
	case RoleIdle:
		want = len(pool) < e.pool.Lower
	case RoleSlave:
		surplus := len(pool) - e.pool.Upper
		want = surplus > 0 && slices.Index(pool, e.self) < surplus
	}
	if !want {
		e.since = -1
	} else if e.since < 0 {
		e.since = max(now, e.listenUntil) // a booting node judges only once it has listened
	}
	next := expiry
	if want {
		due := e.since + e.trigger
		if now >= due {
			e.since = -1
			e.drawTrigger()
			if e.role == RoleIdle {
				e.log.Info("too few slaves; promoting to slave", "slaves", len(pool), "lower", e.pool.Lower)
				e.becomeSlave()
			} else {
				e.log.Info("too many slaves; demoting to idle", "slaves", len(pool), "upper", e.pool.Upper)
				e.role = RoleIdle
				e.disarm(timerSlaveBeat)
				e.poolCheck()
			}
			return
		}
		if next < 0 || due < next {
			next = due
		}
	}
	if next >= 0 && (e.poolAt < now || next < e.poolAt) {
		e.poolAt = next
		e.arm(timerPool, next-now)
	}
}

// run starts (or starts again) an election among the slaves.
func (e *emergent) run() {
	if !e.inPool() {
		return
	}
	e.startElection()
	if e.role == RoleSlave {
		e.oldEpoch = e.epoch
	}
	e.role = RoleCandidate
	e.setView("", e.epoch, false)
	pool, _ := e.countPool()
	var higher []string
	for _, p := range pool {
		if e.above(p, e.self) {
			higher = append(higher, p)
		}
	}
	if len(higher) == 0 {
		e.win()
		return
	}
	for _, p := range higher {
		e.send(p, Message{Kind: KindElection, ID: e.self, Epoch: e.maxEpoch})
	}
	e.phase = emAwaitingAnswer
	e.disarm(timerCoordinator)
	e.disarm(timerConfirm)
	e.arm(timerAnswer, e.t.AnswerTimeout)
}

// win makes this candidate the winner: it tells the lower slaves and
// waits for the old master before it takes over.
func (e *emergent) win() {
	e.phase = emConfirming
	e.winner, e.winnerEpoch = e.self, e.maxEpoch+1
	e.noteEpoch(e.winnerEpoch)
	e.disarm(timerAnswer)
	e.disarm(timerCoordinator)
	pool, _ := e.countPool()
	for _, p := range pool {
		if e.above(e.self, p) {
			e.send(p, Message{Kind: KindCoordinator, ID: e.self, Epoch: e.winnerEpoch})
		}
	}
	e.arm(timerConfirm, e.confirmDelay)
}

func (e *emergent) receive(from string, m Message) {
	e.recv[m.Kind]++
	e.heard(from)
	switch m.Kind {
	case KindSlaveHeartbeat:
		e.noteEpoch(m.Epoch)
		e.slaves[from] = e.env.now()
		e.poolCheck()
	case KindHeartbeat:
		e.onMasterHeartbeat(from, m)
	case KindElection:
		e.noteEpoch(m.Epoch)
		if !e.inPool() || !e.above(e.self, from) {
			e.suppressed++ // idle nodes and masters take no part
			return
		}
		e.send(from, Message{Kind: KindAnswer, ID: e.self, Epoch: e.maxEpoch})
		if e.role == RoleSlave {
			e.run()
		}
	case KindAnswer:
		e.noteEpoch(m.Epoch)
		if e.role == RoleCandidate && e.phase == emAwaitingAnswer {
			e.phase = emAwaitingCoord
			e.disarm(timerAnswer)
			e.arm(timerCoordinator, e.t.CoordinatorTimeout)
		}
	case KindCoordinator:
		e.noteEpoch(m.Epoch)
		e.onCoordinator(m)
	}
}

func (e *emergent) onCoordinator(m Message) {
	w := m.ID
	switch {
	case !e.inPool() || w == e.self:
		e.suppressed++
		return
	case e.above(e.self, w):
		e.suppressed++ // a lower slave claims to win: bully it
		if e.role == RoleSlave {
			e.run()
		}
		return
	}
	if e.role == RoleSlave {
		e.oldEpoch = e.epoch
		e.role = RoleCandidate
		e.joinElection()
		e.setView("", e.epoch, false)
	}
	e.phase = emFollowing
	e.winner, e.winnerEpoch = w, m.Epoch
	e.disarm(timerAnswer)
	e.disarm(timerConfirm)
	e.arm(timerCoordinator, e.confirmDelay+e.t.SuspectTimeout)
}

// newer reports whether a master heartbeat from from at epoch outranks the
// master this node knows.
func (e *emergent) newer(from string, epoch uint64) bool {
	if !e.ok {
		return true
	}
	return epoch > e.epoch || (epoch == e.epoch && e.above(from, e.coord))
}

func (e *emergent) onMasterHeartbeat(from string, m Message) {
	e.noteEpoch(m.Epoch)
	if _, ok := e.slaves[from]; ok {
		delete(e.slaves, from) // a master is no longer a slave
		defer e.poolCheck()
	}
	switch e.role {
	case RoleMaster:
		if e.newer(from, m.Epoch) {
			e.log.Info("another master outranks this one; stepping down", "master", from, "epoch", m.Epoch)
			e.setView(from, m.Epoch, true)
			e.becomeSlave()
		}
	case RoleCandidate:
		if m.Epoch < e.oldEpoch {
			return // a master older than the one the election replaces
		}
		// The old master is alive after all, or the winner (or a newer
		// master) has taken over: the election is over.
		e.setView(from, m.Epoch, true)
		e.becomeSlave()
	default:
		if e.ok && from == e.coord {
			if m.Epoch > e.epoch {
				e.setView(from, m.Epoch, true)
			}
			return
		}
		if e.newer(from, m.Epoch) {
			e.setView(from, m.Epoch, true)
		}
	}
}

func (e *emergent) fire(t timer) {
	if !e.current(t) {
		return
	}
	switch t.kind {
	case timerHeartbeat:
		if e.role == RoleMaster {
			e.masterBeat()
			e.arm(timerHeartbeat, e.t.HeartbeatInterval)
		}
	case timerSlaveBeat:
		if e.inPool() {
			e.slaveBeat()
		}
	case timerPool:
		e.poolAt = -1
		e.poolCheck()
	case timerCheck:
		if !e.checkFired(t) {
			return
		}
		switch e.role {
		case RoleSlave:
			e.run()
		case RoleIdle:
			if e.ok {
				e.setView("", e.epoch, false) // the master went quiet
			}
		}
	case timerAnswer:
		if e.role == RoleCandidate && e.phase == emAwaitingAnswer {
			e.win()
		}
	case timerCoordinator:
		if e.role == RoleCandidate && (e.phase == emAwaitingCoord || e.phase == emFollowing) {
			e.log.Info("no new master in time; starting again")
			e.run()
		}
	case timerConfirm:
		if e.role == RoleCandidate && e.phase == emConfirming {
			e.log.Info("old master silent; taking over", "epoch", e.winnerEpoch)
			e.becomeMaster(e.winnerEpoch)
		}
	}
}

func (e *emergent) suspect(peer string) {
	e.markDown(peer)
	if !e.ok || peer != e.coord || peer == e.self {
		return
	}
	switch e.role {
	case RoleSlave:
		e.run()
	case RoleIdle:
		e.setView("", e.epoch, false)
	}
}

// undeliverable feeds the detector; a slave marked down is not counted
// until it is heard from again or the mark expires.
func (e *emergent) undeliverable(to string, m Message) {
	e.lost++
	e.markDown(to)
}
