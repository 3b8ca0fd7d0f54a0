package classic

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Kind is the type of a message. Each algorithm uses its own kinds (see
// Algorithm.Kinds); KindHeartbeat belongs to the failure detector that
// all three share, and is counted apart so that the textbook figures are
// about election messages only.
type Kind uint8

// The message kinds.
const (
	// KindHeartbeat: coordinator to members, "I am alive" (all of them;
	// the emergent algorithm's master heartbeat).
	KindHeartbeat Kind = iota + 1
	// KindElection: ring, the candidate's id travelling clockwise; bully,
	// sent to every higher id.
	KindElection
	// KindElected: ring, the winner's id travelling once round the ring.
	KindElected
	// KindAnswer: bully, a higher process's reply to Election (the UIUC
	// slides call it OK).
	KindAnswer
	// KindCoordinator: bully, the winner to every lower id.
	KindCoordinator
	// KindProbe: invitation, a coordinator asking "are you a
	// coordinator?" (Garcia-Molina's AreYouCoordinator).
	KindProbe
	// KindProbeReply: invitation, the answer to a probe.
	KindProbeReply
	// KindInvitation: invitation, "join my new group".
	KindInvitation
	// KindAccept: invitation, a process joining the inviter's group.
	KindAccept
	// KindAcceptAnswer: invitation, the inviter acknowledging an accept.
	KindAcceptAnswer
	// KindReady: invitation, the new group's coordinator confirming it.
	KindReady
	// KindReadyAnswer: invitation, a member acknowledging Ready.
	KindReadyAnswer
	// KindSlaveHeartbeat: emergent, a slave (or candidate) to every other
	// node, "I am in the slave pool". Counted apart like KindHeartbeat.
	KindSlaveHeartbeat
	// KindHello: the transport's own, never an algorithm's: the first
	// message on every connection MuxTransport dials, carrying the
	// sender's HTTP address (see MuxTransport.Advertise).
	KindHello

	numKinds = int(KindHello) + 1
)

var kindNames = [numKinds]string{
	KindHeartbeat:      "heartbeat",
	KindElection:       "election",
	KindElected:        "elected",
	KindAnswer:         "answer",
	KindCoordinator:    "coordinator",
	KindProbe:          "probe",
	KindProbeReply:     "probe_reply",
	KindInvitation:     "invitation",
	KindAccept:         "accept",
	KindAcceptAnswer:   "accept_answer",
	KindReady:          "ready",
	KindReadyAnswer:    "ready_answer",
	KindSlaveHeartbeat: "slave_heartbeat",
	KindHello:          "hello",
}

// heartbeat reports whether k is a heartbeat (the master's or a
// slave's), counted apart from the election messages.
func (k Kind) heartbeat() bool { return k == KindHeartbeat || k == KindSlaveHeartbeat }

func (k Kind) valid() bool { return k >= KindHeartbeat && int(k) < numKinds }

// String returns the kind's wire name ("election").
func (k Kind) String() string {
	if !k.valid() {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// MarshalText encodes the kind as its wire name.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("%w: kind %d", ErrBadFrame, uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText decodes a wire name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i := int(KindHeartbeat); i < numKinds; i++ {
		if kindNames[i] == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown kind %q", ErrBadFrame, b)
}

// Message is one election message. The sender is not part of it: the
// transport knows who is at the other end.
type Message struct {
	Kind Kind `json:"kind"`
	// ID is the process the message is about: the candidate (ring
	// Election), the winner (Elected, Coordinator, Heartbeat), the sender
	// (bully Election, Answer, probe replies) or the inviting coordinator
	// (Invitation, Accept).
	ID string `json:"id,omitempty"`
	// Initiator (ring) is the process whose election run this is; it is
	// carried for tracing, as the UIUC slides do for multiple initiators.
	Initiator string `json:"initiator,omitempty"`
	// Epoch is the sender's epoch: for ring and bully, the highest epoch it
	// knows (an announcement carries the new one); for invitation, the
	// group number, which with the coordinator's id names the group.
	Epoch uint64 `json:"epoch,omitempty"`
	// OK is the yes or no of a reply (probe, accept and ready answers).
	OK bool `json:"ok,omitempty"`
	// Members (invitation Ready) lists the new group.
	Members []string `json:"members,omitempty"`
	// HTTP (Hello) is the sender's advertised HTTP address.
	HTTP string `json:"http,omitempty"`
}

// maxFrameLen bounds one encoded message, newline included.
const maxFrameLen = 64 << 10

// encodeFrame returns m as one line of JSON.
func encodeFrame(m Message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > maxFrameLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadFrame, len(b)+1)
	}
	return append(b, '\n'), nil
}

// decodeFrame parses one line (without its newline). Unknown fields and
// unknown kinds are errors: a peer that sends them speaks another version.
func decodeFrame(line []byte) (Message, error) {
	var m Message
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	if d.More() {
		return Message{}, fmt.Errorf("%w: data after the message", ErrBadFrame)
	}
	if !m.Kind.valid() {
		return Message{}, fmt.Errorf("%w: missing kind", ErrBadFrame)
	}
	return m, nil
}
