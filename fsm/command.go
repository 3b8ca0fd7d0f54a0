package fsm

import (
	"encoding/json"
	"fmt"
	"time"
)

// Op names a command.
type Op uint8

// Commands. Values are part of the log format: never renumber, only append.
const (
	OpCreateSession  Op = 1  // Session, Name, TTL, LockDelay
	OpDestroySession Op = 2  // Session: release its locks at once, drop its waiters
	OpExpireSession  Op = 3  // Session: like destroy, but locks get the session's lock-delay
	OpAcquire        Op = 4  // Session, Name, Mode, Wait
	OpRelease        Op = 5  // Session, Name
	OpCancelWait     Op = 6  // Session, Name: leave the queue unless already granted
	OpTick           Op = 7  // end lock-delays and drop waiters whose deadline is <= Now
	OpCampaign       Op = 8  // Session, Name, Value, Wait
	OpProclaim       Op = 9  // Session, Name, Value
	OpResign         Op = 10 // Session, Name
	OpCancelCampaign Op = 11 // Session, Name
	OpSetMember      Op = 12 // Member
	OpRemoveMember   Op = 13 // Member.ID
)

// Version is the encoding version written as the first byte of every
// encoded command. Decode rejects others.
const Version byte = 1

// Mode is a lock mode.
type Mode string

// Lock modes.
const (
	Exclusive Mode = "exclusive"
	Shared    Mode = "shared"
)

// Command is one state change. Which fields matter depends on Op (see the
// Op constants). Now is the proposing leader's wall-clock time; the FSM uses
// it as "the current time" for everything it decides.
type Command struct {
	Op        Op            `json:"-"`
	Now       time.Time     `json:"now"`
	Session   string        `json:"session,omitempty"`
	Name      string        `json:"name,omitempty"`
	Mode      Mode          `json:"mode,omitempty"`
	TTL       time.Duration `json:"ttl,omitempty"`
	LockDelay time.Duration `json:"lock_delay,omitempty"`
	Wait      time.Duration `json:"wait,omitempty"`
	Value     string        `json:"value,omitempty"`
	Member    *Member       `json:"member,omitempty"`
	// Seq is the client's request number for lock and election operations
	// (see seq.go); 0 means none.
	Seq uint64 `json:"seq,omitempty"`
}

// Encode returns the log representation of c: the Version byte, the Op
// byte, then a JSON body.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("fsm: encode %v: %w", c.Op, err)
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, Version, byte(c.Op))
	return append(out, body...), nil
}

// Decode parses an encoded command. It returns an error wrapping
// ErrBadCommand for an unknown version, an unknown op or a malformed body.
func Decode(b []byte) (Command, error) {
	var c Command
	if len(b) < 2 {
		return c, fmt.Errorf("%w: %d bytes", ErrBadCommand, len(b))
	}
	if b[0] != Version {
		return c, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadCommand, b[0], Version)
	}
	op := Op(b[1])
	if op < OpCreateSession || op > OpRemoveMember {
		return c, fmt.Errorf("%w: unknown op %d", ErrBadCommand, op)
	}
	if err := json.Unmarshal(b[2:], &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	c.Op = op
	return c, nil
}

func (o Op) String() string {
	switch o {
	case OpCreateSession:
		return "create-session"
	case OpDestroySession:
		return "destroy-session"
	case OpExpireSession:
		return "expire-session"
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpCancelWait:
		return "cancel-wait"
	case OpTick:
		return "tick"
	case OpCampaign:
		return "campaign"
	case OpProclaim:
		return "proclaim"
	case OpResign:
		return "resign"
	case OpCancelCampaign:
		return "cancel-campaign"
	case OpSetMember:
		return "set-member"
	case OpRemoveMember:
		return "remove-member"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}
