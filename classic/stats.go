package classic

import "time"

// Stats is a snapshot of one elector's accounting. Counts start at zero
// when the elector starts (in a Sim, when the node boots or restarts).
type Stats struct {
	// Node and Algorithm say whose snapshot this is.
	Node      string
	Algorithm Algorithm
	// Coordinator, Epoch and OK are the node's current view, as
	// Elector.Coordinator returns it.
	Coordinator string
	Epoch       uint64
	OK          bool
	// InElection reports that the node is taking part in an election
	// (ring participant, bully waiting for Answer or Coordinator,
	// invitation between Invitation and Ready).
	InElection bool
	// ElectionsStarted counts the elections this node started or started
	// again: ring initiations, bully elections (restarts after T' too),
	// invitation merges and recoveries.
	ElectionsStarted uint64
	// LastElection is how long the node's most recent election took, from
	// the moment it started or joined it until it learned the outcome.
	LastElection time.Duration
	// Sent and Received count messages by kind. A message counts as sent
	// when the algorithm hands it to the network, whether or not it
	// arrives.
	Sent     map[Kind]uint64
	Received map[Kind]uint64
	// Lost counts the sent messages that the network reported it could
	// not deliver (the peer was down or cut off).
	Lost uint64
	// Suppressed counts messages the algorithm dropped on purpose: ring
	// Election messages swallowed by a participant with a higher id and
	// duplicate Elected rounds; bully Coordinator messages from lower ids;
	// invitations to a process that is not in its normal state.
	Suppressed uint64
	// Group (invitation only) is the group as this node knows it:
	// sorted, itself included.
	Group []string
	// Role (emergent only) is the node's state: master, slave, candidate
	// or idle.
	Role string
	// Slaves (emergent only) are the slaves this node counts, in rank
	// order, itself included if it is one.
	Slaves []string
	// SentByRole (emergent only) counts the messages sent by the role the
	// node had when it sent them, then by kind.
	SentByRole map[string]map[Kind]uint64
}

// ElectionMessages returns the messages sent of every kind but heartbeats
// (the master's and the slaves'):
// the number the textbooks count.
func (s Stats) ElectionMessages() uint64 {
	var n uint64
	for k, c := range s.Sent {
		if !k.heartbeat() {
			n += c
		}
	}
	return n
}

// counters is the accounting a machine keeps as it runs.
type counters struct {
	sent, recv       [numKinds]uint64
	lost, suppressed uint64
	started          uint64
	lastElection     time.Duration
}

// kindMap turns a per-kind array into the map Stats carries, leaving out
// zeros.
func kindMap(a *[numKinds]uint64) map[Kind]uint64 {
	m := make(map[Kind]uint64)
	for k, n := range a {
		if n > 0 {
			m[Kind(k)] = n
		}
	}
	return m
}

// sortedKeys returns the members of a set in ring order.
func sortedKeys(set map[string]bool, order []string) []string {
	out := make([]string, 0, len(set))
	for _, id := range order {
		if set[id] {
			out = append(out, id)
		}
	}
	return out
}
