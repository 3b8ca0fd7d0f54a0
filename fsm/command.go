package fsm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockd/lockd/acl"
)

// Op names a command.
type Op uint8

// Commands. Values are part of the log format: never renumber, only append.
const (
	OpCreateSession  Op = 1  // Session, Name, TTL, LockDelay, SeqWindow
	OpDestroySession Op = 2  // Session: release its locks at once, drop its waiters
	OpExpireSession  Op = 3  // Session: like destroy, but locks get the session's lock-delay
	OpAcquire        Op = 4  // Session, Name, Mode, Wait, Limit (a semaphore's slots; 0: an exclusive or shared lock)
	OpRelease        Op = 5  // Session, Name
	OpCancelWait     Op = 6  // Session, Name: leave the queue unless already granted
	OpTick           Op = 7  // version-1 entries only: end lock-delays and drop waiters by the wall time Now
	OpCampaign       Op = 8  // Session, Name, Value, Wait
	OpProclaim       Op = 9  // Session, Name, Value
	OpResign         Op = 10 // Session, Name
	OpCancelCampaign Op = 11 // Session, Name
	OpSetMember      Op = 12 // Member
	OpRemoveMember   Op = 13 // Member.ID
	OpTimersDue      Op = 14 // Timers: end the lock-delays and waits whose leader-local timers ran out
	OpLetGo          Op = 15 // Session, Name: release the lock if held, else leave its queue (OpRelease, older entries only, left a queued session queued)
	OpExpireSessions Op = 16 // Sessions: expire each as OpExpireSession does, in the order given; ids already gone are skipped
	OpCreateToken    Op = 17 // ACLToken: store a new ACL token (its secret's hash, never the secret)
	OpRevokeToken    Op = 18 // ACLToken.AccessorID: remove a token
	OpBootstrapACL   Op = 19 // ACLToken: store the first admin token, once in the cluster's life
	OpTxn            Op = 20 // Txn, and Session and Seq for a request number, Owner for the writing token: the namespace's one write (kvtxn.go)
)

// Version is the encoding version written as the first byte of every
// encoded command. Decode also reads version1 entries, which it marks so
// that they apply under the rules they were written for (see the package
// doc); it rejects any other version.
const Version byte = 2

// version1 entries decided lock-delays and waits by the wall time in Now.
const version1 byte = 1

// MaxTimersPerEntry bounds Command.Timers.
const MaxTimersPerEntry = 1000

// MaxLimit bounds Command.Limit: a semaphore has 1 to MaxLimit slots.
const MaxLimit = 1024

// MaxSessionsPerEntry bounds Command.Sessions: an entry that ends that
// many sessions, each releasing what it held, is still short to apply.
const MaxSessionsPerEntry = 1000

// Mode is a lock mode.
type Mode string

// Lock modes.
const (
	Exclusive Mode = "exclusive"
	Shared    Mode = "shared"
)

// Command is one state change. Which fields matter depends on Op (see the
// Op constants). Now is the proposing leader's wall-clock time: the FSM
// only records it for display (acquired_at, delay_until, a waiter's
// deadline) and decides nothing on it, except when replaying a version-1
// entry.
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
	// Limit makes an OpAcquire take one of the Limit slots of a semaphore
	// (1 to MaxLimit); 0, as older builds wrote, takes an exclusive or
	// shared lock. Every holder and waiter of a lock has the same limit.
	Limit int `json:"limit,omitempty"`
	// Seq is the client's request number for lock and election operations
	// and transactions (see seq.go); 0 means none.
	Seq uint64 `json:"seq,omitempty"`
	// SeqWindow is the window of the session a create-session makes (see
	// seq.go); 0, as older builds wrote, keeps every request number.
	SeqWindow int `json:"seq_window,omitempty"`
	// Timers names the timers an OpTimersDue ends.
	Timers []TimerRef `json:"timers,omitempty"`
	// Sessions names the sessions an OpExpireSessions ends.
	Sessions []string `json:"sessions,omitempty"`
	// Owner is the accessor id of the ACL token creating a session, or
	// writing a transaction (the keys it puts belong to that token and
	// count against its limits: quota.go); empty with ACLs off.
	Owner string `json:"owner,omitempty"`
	// ACLToken is the token of OpCreateToken, OpRevokeToken and
	// OpBootstrapACL.
	ACLToken *acl.Token `json:"acl_token,omitempty"`
	// Txn is the transaction of OpTxn.
	Txn *Txn `json:"txn,omitempty"`

	// legacy marks a command decoded from a version-1 entry.
	legacy bool
}

// TimerRef names one leader-local timer: a lock-delay (Session empty), a
// waiter's wait on the lock or election (Election) Name, or, with Slot, the
// lock-delay of the slot of semaphore Name that Session held when it
// expired. Armed is the index of the entry that started it; a ref whose
// Armed no longer matches names a timer that was restarted or ended since,
// and is ignored.
type TimerRef struct {
	Election bool   `json:"election,omitempty"`
	Name     string `json:"name"`
	Session  string `json:"session,omitempty"`
	Slot     bool   `json:"slot,omitempty"`
	Armed    uint64 `json:"armed"`
}

// IsDelay reports whether r names a lock-delay (of a whole lock, or of one
// slot of a semaphore) rather than a waiter's wait.
func (r TimerRef) IsDelay() bool { return r.Session == "" || r.Slot }

// Timer is a pending timer and its full length, which a leader runs from
// when it learns of the timer (so a new leader gives each its full length
// again).
type Timer struct {
	TimerRef
	Length time.Duration
}

// Encode returns the log representation of c: the Version byte, the Op
// byte, then a JSON body.
func Encode(c Command) ([]byte, error) {
	return encodeVersion(c, Version)
}

func encodeVersion(c Command, version byte) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("fsm: encode %v: %w", c.Op, err)
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, version, byte(c.Op))
	return append(out, body...), nil
}

// Decode parses an encoded command. It returns an error wrapping
// ErrBadCommand for an unknown version, an unknown op or a malformed body.
func Decode(b []byte) (Command, error) {
	var c Command
	if len(b) < 2 {
		return c, fmt.Errorf("%w: %d bytes", ErrBadCommand, len(b))
	}
	last := OpTxn
	switch b[0] {
	case Version:
	case version1:
		last = OpRemoveMember
	default:
		return c, fmt.Errorf("%w: version %d (this build reads %d and %d)", ErrBadCommand, b[0], version1, Version)
	}
	op := Op(b[1])
	if op < OpCreateSession || op > last {
		return c, fmt.Errorf("%w: unknown op %d", ErrBadCommand, op)
	}
	if err := json.Unmarshal(b[2:], &c); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	c.Op = op
	c.legacy = b[0] == version1
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
	case OpTimersDue:
		return "timers-due"
	case OpLetGo:
		return "let-go"
	case OpExpireSessions:
		return "expire-sessions"
	case OpCreateToken:
		return "create-token"
	case OpRevokeToken:
		return "revoke-token"
	case OpBootstrapACL:
		return "bootstrap-acl"
	case OpTxn:
		return "txn"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}
