package fsm

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// maxNow bounds Command.Now. Any time.Duration added to a Now before it still
// lies before year 10000, so every time the FSM stores can be encoded in a
// snapshot (encoding/json refuses years past 9999).
var maxNow = time.Date(9700, 1, 1, 0, 0, 0, 0, time.UTC)

// FSM is lockd's replicated state machine.
//
// One goroutine at a time may change it (Apply, ApplyCommand, Restore); any
// number may read it concurrently. Reads return copies that the caller may
// keep and modify. A snapshot is a View, frozen between two entries at a
// cost that does not grow with the state and encoded later on any
// goroutine. The FSM never reads a clock, and decides nothing on the
// wall time a command carries (version-1 entries aside, see the package
// doc): time only acts through OpTimersDue, which the leader proposes when
// its own timers run out.
type FSM struct {
	mu    sync.RWMutex
	st    *state
	watch watchers
	// unsafe holds the fault harness's switches: empty, and every hook
	// on it a constant, in a build without the lockd_unsafe tag
	// (unsafe_off.go, unsafe_on.go).
	unsafe unsafeSwitches
}

// state is everything a snapshot holds. Restore swaps it as a whole, so
// nothing of an old state can survive a restore.
//
// The sessions, the request numbers and the objects are in cowMaps, so
// that a snapshot (View) can be taken between two entries at a cost that
// does not grow with the state, and written out while entries apply.
type state struct {
	applied  uint64
	sessions *cowMap[Session]
	// seqs holds, per session, the highest request number applied for each
	// lock ("l/NAME") and election ("e/NAME") it still keeps; see seq.go.
	seqs      *cowMap[*seqTable]
	locks     *space
	elections *space
	members   map[string]Member
	tokens    tokens
	// kv is the namespace of keys and values (kv.go).
	kv *kvStore
	// touched lists the topics the entry being applied changed, and noted
	// the objects whose request number it recorded (as StandingTopics);
	// both are emptied after every entry.
	touched []Topic
	noted   []Topic
	// activity is what the entry being applied did to the locks' holders;
	// handed to its Result and emptied after every entry.
	activity Activity
}

// op is the context of the entry being applied: its index (the token of
// anything it grants and the name of any timer it starts), its wall time
// (recorded for display), and whether it is a version-1 entry, which
// decides lock-delays and waits by that wall time; and the unsafe
// switches of the FSM (empty without the lockd_unsafe tag).
type op struct {
	index  uint64
	now    time.Time
	legacy bool
	unsafe unsafeSwitches
}

// New returns an empty FSM with applied index 0.
func New() *FSM {
	return &FSM{st: newState()}
}

func newState() *state {
	st := &state{
		sessions:  newCowMap[Session](nil),
		seqs:      newCowMap(cloneSeqTable),
		locks:     newSpace(false),
		elections: newSpace(true),
		members:   make(map[string]Member),
		tokens:    newTokens(),
	}
	st.locks.touched = &st.touched
	st.elections.touched = &st.touched
	st.locks.act = &st.activity
	st.kv = newKVStore(&st.touched)
	return st
}

// Apply decodes one log entry and applies it at index. An entry that does
// not decode yields a Result whose Err wraps ErrBadCommand and changes
// nothing but the applied index. Apply never panics, whatever data holds.
func (f *FSM) Apply(index uint64, data []byte) Result {
	c, err := Decode(data)
	return f.apply(index, c, err)
}

// ApplyCommand applies c as the entry at index. Index must be greater than
// AppliedIndex (Raft guarantees it); an entry with a stale index is refused
// with ErrBadCommand and changes nothing, because replaying it could hand out
// a token lower than one already granted.
func (f *FSM) ApplyCommand(index uint64, c Command) Result {
	return f.apply(index, c, nil)
}

func (f *FSM) apply(index uint64, c Command, decodeErr error) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	if index <= f.st.applied {
		err := fmt.Errorf("%w: index %d is not after applied index %d", ErrBadCommand, index, f.st.applied)
		return Result{Index: index, Err: err}
	}
	f.st.applied = index
	var res Result
	if decodeErr != nil {
		res = Result{Err: decodeErr}
	} else {
		res = f.st.apply(c, index, f.unsafe)
		f.st.boundSeqs()
		f.st.kv.hist.endEntry()
		res.Activity, f.st.activity = f.st.activity, Activity{}
	}
	res.Index = index
	return res
}

// notify wakes the watchers of what the entry just applied changed. The
// caller holds f.mu for writing.
func (f *FSM) notify() {
	f.watch.notify(f.st.touched)
	clear(f.st.touched)
	f.st.touched = f.st.touched[:0]
}

// AppliedIndex returns the index of the last entry applied or restored.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.applied
}

// apply dispatches c. Every handler checks everything before it changes
// anything, so a refusal leaves the state as it was.
func (st *state) apply(c Command, index uint64, u unsafeSwitches) Result {
	// UTC strips the monotonic reading and the location: times compare and
	// encode the same on every replica, however the command reached it.
	o := op{index: index, now: c.Now.UTC(), legacy: c.legacy, unsafe: u}
	if err := precheck(o, c); err != nil {
		return Result{Err: err}
	}
	switch c.Op {
	case OpCreateSession:
		return st.createSession(o, c)
	case OpDestroySession:
		return st.endSession(o, c.Session, false)
	case OpExpireSession:
		return st.endSession(o, c.Session, true)
	case OpExpireSessions:
		return st.expireSessions(o, c)
	case OpAcquire:
		return st.acquire(st.locks, o, c)
	case OpRelease:
		return st.once(st.locks, c, ErrNotHolder, nil, func() Result { return st.release(st.locks, o, c) })
	case OpLetGo:
		return st.once(st.locks, c, ErrNotHolder, nil, func() Result { return st.letGo(st.locks, o, c) })
	case OpCancelWait:
		return st.cancelWait(st.locks, o, c)
	case OpTick:
		if !o.legacy {
			return refuse("%v: only version-1 entries tick; lock-delays and waits end by %v", c.Op, OpTimersDue)
		}
		st.locks.tick(o)
		st.elections.tick(o)
		return Result{}
	case OpTimersDue:
		return st.timersDue(o, c)
	case OpCampaign:
		return st.acquire(st.elections, o, c)
	case OpProclaim:
		return st.once(st.elections, c, ErrNotHolder, func() bool { return st.proclaimed(c) }, func() Result { return st.proclaim(o, c) })
	case OpResign:
		return st.once(st.elections, c, ErrNotHolder, nil, func() Result { return st.letGo(st.elections, o, c) })
	case OpCancelCampaign:
		return st.cancelWait(st.elections, o, c)
	case OpSetMember:
		return st.setMember(c)
	case OpRemoveMember:
		return st.removeMember(c)
	case OpCreateToken, OpBootstrapACL:
		return st.createToken(o, c)
	case OpRevokeToken:
		return st.revokeToken(c)
	case OpTxn:
		return st.txn(o, c)
	}
	return refuse("unknown op %d", uint8(c.Op))
}

// precheck refuses what no command may carry.
func precheck(o op, c Command) error {
	if o.now.Before(time.Time{}) || !o.now.Before(maxNow) {
		return refuse("%v: now %s out of range", c.Op, c.Now).Err
	}
	if !validUTF8(c) {
		// A snapshot would store such a string altered (encoding/json
		// replaces invalid bytes), so the restored state would differ.
		return refuse("%v: invalid UTF-8", c.Op).Err
	}
	return nil
}

// Refusal returns the refusal applying c now would answer with, when
// applying it would change nothing but the applied index; and nil when c
// must be applied to learn its answer (it would change the state, or be
// granted, or Refusal does not know). It only reads the state, so a leader
// that may answer reads from its state can answer these refusals without
// a log entry. It knows acquires and campaigns (planAcquire: a refusal
// that records nothing, which excludes one carrying a request number not
// seen before) and any command naming a session that does not exist,
// which can never exist again; it returns nil for anything else.
func (f *FSM) Refusal(c Command) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := f.st
	o := op{now: c.Now.UTC(), unsafe: f.unsafe}
	if err := precheck(o, c); err != nil {
		return err
	}
	switch c.Op {
	case OpAcquire, OpCampaign:
		if p := st.planAcquire(st.space(c.Op == OpCampaign), o, c); p.pure() {
			return p.res.Err
		}
	case OpDestroySession, OpExpireSession, OpRelease, OpLetGo, OpCancelWait, OpProclaim, OpResign, OpCancelCampaign:
		// Each of these checks its session before anything else.
		if !st.sessions.has(c.Session) {
			return sessionNotFound(c.Session)
		}
	case OpTxn:
		// Every refusal of a transaction is decided before it changes
		// anything, and it records nothing when refused.
		_, err := st.planTxn(o, c)
		return err
	}
	return nil
}

func sessionNotFound(id string) error { return fmt.Errorf("%w: %q", ErrSessionNotFound, id) }

func validUTF8(c Command) bool {
	strs := []string{c.Session, c.Name, string(c.Mode), c.Value, c.Owner}
	if t := c.ACLToken; t != nil {
		strs = append(strs, t.AccessorID, t.Hash, t.Description)
		for _, r := range t.Rules {
			strs = append(strs, string(r.Kind), r.Prefix, string(r.Access))
		}
	}
	if c.Member != nil {
		strs = append(strs, c.Member.ID, c.Member.Peer, c.Member.HTTP)
	}
	for _, r := range c.Timers {
		strs = append(strs, r.Name, r.Session)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// refuse returns a Result whose Err wraps ErrBadCommand.
func refuse(format string, args ...any) Result {
	return Result{Err: fmt.Errorf("%w: "+format, append([]any{ErrBadCommand}, args...)...)}
}
