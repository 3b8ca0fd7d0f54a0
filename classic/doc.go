// Package classic runs the textbook election algorithms for real, beside
// Raft, so that anyone can see what each costs and what breaks: the ring
// (Chang and Roberts), the bully and the invitation algorithm (both
// Garcia-Molina), as the classic lectures teach them, with a
// heartbeat failure detector shared by all three; and the emergent
// election (R. J. Anthony), where a small pool of slaves alone elects the
// master, by the bully among themselves, while idle nodes only watch the
// pool and keep it between a lower and an upper limit (emergent.go says
// why the bully and not the ring).
//
// Each algorithm is a state machine with no I/O and no clock of its own
// (ring.go, bully.go, invitation.go, detector.go): it is driven by events
// (a message, a timer, a suspicion, a lost message, a request to elect)
// and acts by sending messages and asking for timers. Two drivers feed the
// same machines:
//
//   - Sim, a deterministic in-memory network with a virtual clock and a
//     seeded random source for delays, drops, crashes and partitions. It
//     runs thousands of elections a second and is how the textbook message
//     counts are pinned and how `lockd-bench elections` measures them.
//   - Node, one elector over a real Transport with real timers.
//     MuxTransport carries it over internal/mux, on the algorithm's own
//     protocol byte (Algorithm.Proto), so mux's fault rules partition it
//     like everything else.
//
// Node ids are strings that end in a number, the rank ("n1".."n16"; see
// Rank). The highest rank is "the highest id" of the textbooks, and the
// ring runs clockwise by ascending rank, from the highest back to the
// lowest.
//
// Every message counts as sent when the algorithm hands it to the network,
// whether it arrives or not, by kind (Stats.Sent). Heartbeats are counted
// apart from election messages (Stats.ElectionMessages), so the textbook
// figures are about elections only. Stats also reports elections started
// and how long the last one took; Sim.Settle returns the time to
// agreement.
//
// What the algorithms do not guarantee:
//
//   - Ring and bully elect one coordinator for the whole cluster only
//     while the network is whole and the failure detector is right. Under
//     a partition each side elects its own, and both believe they lead the
//     cluster: split brain. A coordinator taken for dead by a slow network
//     goes on leading beside its successor until it hears of it. Nothing
//     fences an old coordinator off; epochs are informational and the two
//     sides of a partition can reach the same number.
//
//   - Bully also needs bounded delays: its timeouts assume them (UIUC:
//     liveness only in a synchronous system). A restarted process with the
//     highest id takes over from a working coordinator, and during the
//     handover members may disagree (Edinburgh).
//
//   - Invitation elects one coordinator per group of processes that can
//     talk, by design: under a partition there is one per side, and the
//     sides merge when it heals. The coordinator of a merged group is the
//     process that invited, not necessarily the highest id, and
//     agreement holds only within a group, named by its coordinator's id
//     and epoch.
//
//   - Emergent elects among the slaves only and waits a few missed master
//     heartbeats before the new master takes over, but nothing fences the
//     old master either: under a partition the side without it elects
//     another, and the two masters meet, and one steps down, only when
//     their heartbeats cross again.
//
// None of them is a lease. lockd serves from the coordinator they pick
// only as a demonstration of these failure modes; Raft with the master
// lease (package lease) is the safe mode.
package classic
