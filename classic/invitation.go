package classic

import (
	"slices"
	"time"
)

// invitation is Garcia-Molina's invitation algorithm (1982), as the
// Edinburgh lecture teaches it, for networks that partition and timing
// that cannot be bounded. It does not elect one coordinator for the
// cluster: it keeps every process in exactly one group with one
// coordinator, and merges groups that can talk.
//
//   - Every process starts as the coordinator of a group of its own, with
//     a group id unique to it (Edinburgh: "each process can form a
//     singleton group with itself as coordinator"). The group id is the
//     coordinator's id and a number higher than any this process has
//     seen; the number is the epoch.
//   - Every CheckInterval a coordinator asks the processes outside its
//     group whether they are coordinators (Probe, Garcia-Molina's
//     AreYouCoordinator). When it finds some, it waits a time based on
//     its rank, longer for a lower rank, and then invites them, and the
//     members of its own group, to a new group (Edinburgh: "to avoid a
//     livelock ... each coordinator will wait for a period based on its
//     own group identifier before issuing the invitation").
//   - A process in its normal state that receives an invitation forwards
//     it to its members if it is a coordinator, and accepts by sending
//     Accept to the inviter, which acknowledges with an answer. The
//     inviter becomes coordinator of the enlarged group and confirms it by
//     sending Ready, with the member list, to each member, which responds
//     with an answer (Edinburgh, Garcia-Molina's Merge and Invitation).
//   - A member that hears no heartbeat from its coordinator for
//     SuspectTimeout, or no Ready in time, forms a singleton group again
//     (Garcia-Molina's Recovery; lockd uses the shared heartbeats for his
//     AreYouThere). A coordinator that cannot reach a member, or hears
//     that it has left, drops it and reorganizes the rest under a new
//     group id, since "any change in the structure of the group results
//     in a new identifier being assigned" (Edinburgh).
//
// Under a partition each side therefore ends with its own group and
// coordinator, and when it heals the coordinators find each other and
// merge. The coordinator of a merged group is the process that invited,
// usually the highest-ranked coordinator, not necessarily the highest id.
type invitation struct {
	base
	status invStatus
	// group is the group as this node knows it, itself included: a
	// coordinator's Up set, or a member's list from Ready.
	group map[string]bool
	// found holds the coordinators that answered yes to this node's
	// probes since its last merge.
	found      map[string]bool
	mergeArmed bool
}

type invStatus uint8

const (
	invNormal   invStatus = iota
	invElection           // between Invitation and Ready
)

func (v *invitation) boot(initial Change) {
	v.armCheck()
	v.found = make(map[string]bool)
	v.arm(timerProbe, v.t.CheckInterval)
	if initial.OK {
		v.group = make(map[string]bool)
		for _, id := range v.ids {
			v.group[id] = true
		}
		v.setView(initial.Coordinator, initial.Epoch, true)
		return
	}
	v.recover()
}

func (v *invitation) elect() {
	switch {
	case v.status != invNormal:
	case v.leading():
		v.probe()
	default:
		v.recover()
	}
}

func (v *invitation) busy() bool { return v.status != invNormal }

func (v *invitation) stats() Stats {
	s := v.baseStats(v.busy())
	s.Group = sortedKeys(v.group, v.ids)
	return s
}

// recover forms a singleton group with a new group id.
func (v *invitation) recover() {
	v.startElection()
	v.status = invNormal
	v.group = map[string]bool{v.self: true}
	v.resetMerge()
	v.disarm(timerReady)
	v.disarm(timerAccept)
	v.setView(v.self, v.maxEpoch+1, true)
	v.probe()
}

func (v *invitation) resetMerge() {
	clear(v.found)
	v.mergeArmed = false
	v.disarm(timerMerge)
}

// probe asks every process outside the group whether it is a coordinator.
func (v *invitation) probe() {
	if !v.leading() || v.status != invNormal {
		return
	}
	for _, p := range v.others() {
		if !v.group[p] {
			v.send(p, Message{Kind: KindProbe, ID: v.self, Epoch: v.epoch})
		}
	}
}

// mergeWait is how long a coordinator that found others waits before it
// invites them: the replies' time, plus MergeDelay per step of rank below
// the highest.
func (v *invitation) mergeWait() time.Duration {
	steps := len(v.ids) - 1 - slices.Index(v.ids, v.self)
	return v.t.ReplyTimeout + time.Duration(steps)*v.t.MergeDelay
}

// merge invites the coordinators found and the old members to a new group
// led by this node (Garcia-Molina's Merge). With nobody to invite, the
// node forms a new group of its own.
func (v *invitation) merge() {
	invitees := make(map[string]bool, len(v.found)+len(v.group))
	for p := range v.found {
		invitees[p] = true
	}
	for p := range v.group {
		invitees[p] = true
	}
	delete(invitees, v.self)
	if len(invitees) == 0 {
		v.recover()
		return
	}
	v.startElection()
	v.resetMerge()
	v.status = invElection
	v.group = map[string]bool{v.self: true}
	g := v.maxEpoch + 1
	v.setView(v.self, g, false)
	for _, p := range sortedKeys(invitees, v.ids) {
		v.send(p, Message{Kind: KindInvitation, ID: v.self, Epoch: g})
	}
	v.arm(timerAccept, v.t.ReplyTimeout)
}

func (v *invitation) receive(from string, m Message) {
	v.recv[m.Kind]++
	v.heard(from)
	v.noteEpoch(m.Epoch)
	switch m.Kind {
	case KindProbe:
		yes := v.leading() && v.status == invNormal
		v.send(from, Message{Kind: KindProbeReply, ID: v.self, Epoch: v.epoch, OK: yes})
	case KindProbeReply:
		if m.OK && v.leading() && v.status == invNormal && !v.group[from] {
			v.found[from] = true
			if !v.mergeArmed {
				v.mergeArmed = true
				v.arm(timerMerge, v.mergeWait())
			}
		}
	case KindInvitation:
		v.onInvitation(m)
	case KindAccept:
		ok := v.status == invElection && v.coord == v.self && v.epoch == m.Epoch
		if ok {
			v.group[from] = true
		}
		v.send(from, Message{Kind: KindAcceptAnswer, ID: v.self, Epoch: m.Epoch, OK: ok})
	case KindAcceptAnswer:
		if !m.OK && v.status == invElection && v.coord == from && v.epoch == m.Epoch {
			v.recover() // the inviter has moved on
		}
	case KindReady:
		v.onReady(from, m)
	case KindHeartbeat:
		if from != v.coord {
			// A coordinator whose group this node has left (it was
			// invited away) still counts it in: answer no, as to a Ready
			// for a group it is not in, and the coordinator drops it.
			v.send(from, Message{Kind: KindReadyAnswer, ID: v.self, Epoch: m.Epoch})
		}
	case KindReadyAnswer:
		if !m.OK && v.epoch == m.Epoch {
			v.drop(from)
		}
	}
}

// onInvitation joins the inviter's new group (Garcia-Molina's
// Invitation): only a process in its normal state accepts.
func (v *invitation) onInvitation(m Message) {
	if v.status != invNormal || m.ID == v.self {
		v.suppressed++
		return
	}
	if v.leading() {
		for _, p := range sortedKeys(v.group, v.ids) {
			if p != v.self && p != m.ID {
				v.send(p, m)
			}
		}
	}
	v.resetMerge()
	v.status = invElection
	v.group = nil
	v.joinElection()
	v.setView(m.ID, m.Epoch, false)
	v.send(m.ID, Message{Kind: KindAccept, ID: m.ID, Epoch: m.Epoch})
	v.arm(timerReady, 2*v.t.ReplyTimeout)
}

func (v *invitation) onReady(from string, m Message) {
	ok := v.status == invElection && v.coord == from && v.epoch == m.Epoch
	if ok {
		v.status = invNormal
		v.disarm(timerReady)
		v.group = make(map[string]bool, len(m.Members))
		for _, p := range m.Members {
			v.group[p] = true
		}
		v.setView(from, m.Epoch, true)
	}
	v.send(from, Message{Kind: KindReadyAnswer, ID: v.self, Epoch: m.Epoch, OK: ok})
}

func (v *invitation) fire(t timer) {
	if !v.current(t) {
		return
	}
	switch t.kind {
	case timerHeartbeat:
		v.heartbeatFired(t, v.members())
	case timerCheck:
		if v.checkFired(t) && !v.leading() && v.status == invNormal {
			v.recover()
		}
	case timerProbe:
		v.probe()
		v.arm(timerProbe, v.t.CheckInterval)
	case timerMerge:
		v.mergeArmed = false
		if v.leading() && v.status == invNormal && len(v.found) > 0 {
			v.merge()
		}
	case timerAccept:
		if v.status == invElection && v.coord == v.self {
			v.ready()
		}
	case timerReady:
		if v.status == invElection && v.coord != v.self {
			v.log.Info("no Ready in time; forming own group")
			v.recover()
		}
	}
}

// ready confirms the new group to every member that accepted.
func (v *invitation) ready() {
	v.status = invNormal
	list := sortedKeys(v.group, v.ids)
	for _, p := range list {
		if p != v.self {
			v.send(p, Message{Kind: KindReady, ID: v.self, Epoch: v.epoch, Members: list})
		}
	}
	v.setView(v.self, v.epoch, true)
}

// members returns the group but this node, in ring order.
func (v *invitation) members() []string {
	out := sortedKeys(v.group, v.ids)
	return slices.DeleteFunc(out, func(p string) bool { return p == v.self })
}

// drop removes a member that is gone from a normal coordinator's group,
// and reorganizes the group under a new id.
func (v *invitation) drop(p string) {
	if v.leading() && v.status == invNormal && p != v.self && v.group[p] {
		delete(v.group, p)
		v.log.Info("member gone; reorganizing", "member", p)
		v.merge()
	}
}

func (v *invitation) suspect(peer string) {
	v.markDown(peer)
	switch {
	case v.leading():
		v.drop(peer)
	case v.status == invNormal && peer == v.coord:
		v.recover()
	}
}

func (v *invitation) undeliverable(to string, m Message) {
	v.lost++
	v.markDown(to)
	switch {
	case m.Kind == KindHeartbeat:
		v.drop(to) // a coordinator drops a member it cannot reach
	case m.Kind == KindAccept && v.status == invElection && v.coord == to:
		v.recover() // the inviter is gone
	}
}
