package fsm

import (
	"time"

	"github.com/lockd/lockd/acl"
)

// Session is a session as the replicated state knows it. Deadlines are not
// part of it: the leader keeps those.
type Session struct {
	ID          string        `json:"id"`
	Name        string        `json:"name,omitempty"`
	TTL         time.Duration `json:"ttl"`
	LockDelay   time.Duration `json:"lock_delay"`
	CreateIndex uint64        `json:"create_index"`
	// SeqWindow bounds the session's request numbers (see seq.go); 0 keeps
	// them all, as sessions of older builds' entries do.
	SeqWindow int `json:"seq_window,omitempty"`
	// Owner is the accessor id of the ACL token that created the session
	// (empty when ACLs were off): only that token, or an admin token, may
	// use it (acl.Owns).
	Owner string `json:"owner,omitempty"`
}

// Holder is one holder of a lock. Token is the Raft index of the entry that
// granted it.
type Holder struct {
	Session    string    `json:"session"`
	Token      uint64    `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// Waiter is one queued acquire or campaign. Its wait is a leader-local
// timer of length Wait started by entry Since (the acquire that queued it,
// or the last retry, which restarts it); Deadline is the wall time the
// stamping leader expected it to end, shown only.
type Waiter struct {
	Session  string        `json:"session"`
	Mode     Mode          `json:"mode"`
	Deadline time.Time     `json:"deadline"`
	Wait     time.Duration `json:"wait,omitempty"`
	Since    uint64        `json:"since,omitempty"`
	Value    string        `json:"value,omitempty"`
}

// Lock is the state of one lock or election. Mode is the mode of the current
// holders and empty while nobody holds it. For elections Mode is always
// Exclusive and Value is the leader's value (empty while there is no leader).
//
// A lock-delay is in force while DelayIndex is not 0: it is a leader-local
// timer of length Delay started by entry DelayIndex, and ends with the
// OpTimersDue that names it. DelayUntil is the wall time the stamping
// leader expected it to end, shown only.
//
// A semaphore (Limit above 0) has Limit slots, each held exclusively: up
// to Limit holders at once, each with its own token, and Mode Exclusive
// while any holds one. It never has the lock-delay above; instead each
// slot whose holder expired stays ungrantable for that holder's lock-delay
// (Slots), while the other free slots stay grantable: Limit − holders −
// delayed slots can be granted. The limit is the object's for as long as
// it exists (holders, waiters or delayed slots).
type Lock struct {
	Name        string        `json:"name"`
	Mode        Mode          `json:"mode,omitempty"`
	Limit       int           `json:"limit,omitempty"`
	Holders     []Holder      `json:"holders,omitempty"`
	Waiters     []Waiter      `json:"waiters,omitempty"`
	DelayUntil  time.Time     `json:"delay_until,omitzero"`
	Delay       time.Duration `json:"delay,omitempty"`
	DelayIndex  uint64        `json:"delay_index,omitempty"`
	Slots       []SlotDelay   `json:"delayed_slots,omitempty"`
	Value       string        `json:"value,omitempty"`
	ModifyIndex uint64        `json:"modify_index"`
}

// SlotDelay is the lock-delay of one slot of a semaphore: Session expired
// holding it in entry Index, and the slot stays ungrantable until the
// OpTimersDue naming it (TimerRef with Slot) ends its leader-local timer
// of length Length. Until is the wall time the stamping leader expected it
// to end, shown only. A semaphore keeps them in the order they started.
type SlotDelay struct {
	Session string        `json:"session"`
	Index   uint64        `json:"index"`
	Length  time.Duration `json:"length"`
	Until   time.Time     `json:"until"`
}

// Ref names the timer of d on semaphore name.
func (d SlotDelay) Ref(name string) TimerRef {
	return TimerRef{Name: name, Session: d.Session, Slot: true, Armed: d.Index}
}

// Member is one node in the replicated member table.
type Member struct {
	ID   string `json:"id"`
	Peer string `json:"peer"`
	HTTP string `json:"http"`
	// Etcd is the URL of its etcd API, "" for none. (Builds before it
	// ignore it: it decides nothing.)
	Etcd string `json:"etcd,omitempty"`
}

// Result is what Apply returns for one command.
type Result struct {
	// Index is the Raft index the command was applied at.
	Index uint64
	// Err is a deterministic refusal (see the package's errors); nil on success.
	Err error
	// Session is set by create-session.
	Session *Session
	// Granted and Token are set by acquire and campaign: Granted means the
	// session holds the lock now, with Token. Granted false with a nil Err
	// means the request was queued (Wait > 0).
	Granted bool
	Token   uint64
	// Released lists, sorted, the locks a destroy or expire took from the
	// session, and Resigned the elections it led. Hand-offs that followed
	// are visible in the locks' states.
	Released []string
	Resigned []string
	// Expired lists, in the order applied, the sessions an expire-sessions
	// ended and what each of them released and resigned.
	Expired []Expiry
	// ACLToken is the token a create-token or bootstrap-acl stored, or a
	// revoke-token removed.
	ACLToken *acl.Token
	// Activity is what the entry did to the locks' holders (for metrics).
	Activity Activity
	// Txn is what a transaction did (nil if it was refused).
	Txn *TxnResult
}

// Expiry is one session an expire-sessions ended: the locks it held, and
// the elections it led, sorted.
type Expiry struct {
	Session  string
	Released []string
	Resigned []string
}
