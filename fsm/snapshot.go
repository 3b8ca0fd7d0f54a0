package fsm

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lockd/lockd/acl"
)

// snapshotVersion is the format version Snapshot writes. Bump it for any
// change an older build would misread. Restore also reads
// snapshotVersion1, written before lock-delays and waits were leader-local
// timers, and snapshotVersion2, written before request numbers were
// bounded (its sessions keep every number: seq.go), and snapshotVersion3,
// written before ACL tokens (it has none), and snapshotVersion4, written
// before the namespace of keys (it restores with none), and
// snapshotVersion5, written before semaphores (it has none), and
// snapshotVersion6, written before keys had owners and tokens limits (its
// keys belong to no token).
const snapshotVersion = 7

const (
	snapshotVersion1 = 1
	snapshotVersion2 = 2
	snapshotVersion3 = 3
	snapshotVersion4 = 4
	snapshotVersion5 = 5
	snapshotVersion6 = 6
)

// Lengths given on restore of a version-1 snapshot to timers it could not
// record: the longest lock-delay and the longest wait the API accepts, so
// that a restored delay or wait ends no earlier than it would have.
const (
	v1LockDelay = 60 * time.Second
	v1Wait      = 5 * time.Minute
)

// snapshotFile is the encoded state. Everything is in sorted slices so that
// equal states encode to equal bytes. The reverse indexes and timed sets
// are not stored: Restore rebuilds them from the objects.
type snapshotFile struct {
	Version        int       `json:"version"`
	AppliedIndex   uint64    `json:"applied_index"`
	LocksIndex     uint64    `json:"locks_index"`
	ElectionsIndex uint64    `json:"elections_index"`
	Sessions       []Session `json:"sessions"`
	Locks          []Lock    `json:"locks"`
	Elections      []Lock    `json:"elections"`
	Members        []Member  `json:"members"`
	// Seqs: per session, the last request number per object it keeps, and
	// SeqFloors the floor of each session that has one (seq.go).
	Seqs      map[string]map[string]uint64 `json:"seqs,omitempty"`
	SeqFloors map[string]uint64            `json:"seq_floors,omitempty"`
	// ACLTokens are the ACL tokens, and ACLBootstrapped whether the
	// bootstrap token was ever created (version 4 on).
	ACLTokens       []acl.Token `json:"acl_tokens,omitempty"`
	ACLBootstrapped bool        `json:"acl_bootstrapped,omitempty"`
	// The namespace of keys (version 5 on; kvsnapshot.go).
	kvFile
}

// Snapshot returns the whole state, encoded. Two FSMs that applied the same
// entries return the same bytes. It is View().Marshal().
func (f *FSM) Snapshot() ([]byte, error) {
	return f.View().Marshal()
}

// View is the state as it was after one entry, frozen. Taking it costs the
// same whatever the size of the state, so that Raft's FSM goroutine, which
// takes it between two entries, stops applying only for that long;
// encoding it (Marshal), which takes time in proportion to the state, can
// then run on any goroutine while entries go on applying. A View never
// changes, and the FSM's later entries copy what they change rather than
// change what a View shares (see cowMap).
type View struct {
	applied                    uint64
	locksIndex, electionsIndex uint64
	sessions                   *cowMap[Session]
	seqs                       *cowMap[*seqTable]
	locks, elections           *cowMap[*Lock]
	members                    []Member
	tokens                     []acl.Token
	bootstrapped               bool
	kv                         kvView
}

// View returns the current state, frozen.
func (f *FSM) View() *View {
	f.mu.Lock() // freezing marks the live maps' parts as shared
	defer f.mu.Unlock()
	st := f.st
	return &View{
		applied:        st.applied,
		locksIndex:     st.locks.index,
		electionsIndex: st.elections.index,
		sessions:       st.sessions.freeze(),
		seqs:           st.seqs.freeze(),
		locks:          st.locks.objs.freeze(),
		elections:      st.elections.objs.freeze(),
		members:        sortedValues(st.members),
		tokens:         st.tokens.sorted(), // at most MaxTokens, small
		bootstrapped:   st.tokens.bootstrapped,
		kv:             st.kv.freeze(),
	}
}

// AppliedIndex returns the index of the last entry the view holds.
func (v *View) AppliedIndex() uint64 { return v.applied }

// setKey sets m[k] = v, making m first if it is nil.
func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = make(map[string]V)
	}
	m[k] = v
	return m
}

// Restore replaces the whole state with the snapshot read from r. On any
// error (errors wrap ErrBadSnapshot, or are r's own read errors) the
// current state stays as it was.
func (f *FSM) Restore(r io.Reader) error {
	st, err := readSnapshot(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st.kv.hist.limits = f.st.kv.hist.limits // the node's, not the snapshot's
	f.st = st
	f.watch.notifyAll()
	return nil
}

func readSnapshot(r io.Reader) (*state, error) {
	dec := json.NewDecoder(r)
	var file snapshotFile
	if err := dec.Decode(&file); err != nil {
		return nil, badSnapshot(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badSnapshot(errors.New("data after the snapshot"))
	}
	switch file.Version {
	case snapshotVersion1, snapshotVersion2:
		if file.SeqFloors != nil || slices.ContainsFunc(file.Sessions, func(s Session) bool { return s.SeqWindow != 0 }) {
			return nil, badSnapshot(fmt.Errorf("version %d with bounded request numbers", file.Version))
		}
	case snapshotVersion3:
		if file.ACLTokens != nil || file.ACLBootstrapped {
			return nil, badSnapshot(fmt.Errorf("version %d with ACL tokens", file.Version))
		}
	case snapshotVersion4, snapshotVersion5, snapshotVersion6, snapshotVersion:
	default:
		return nil, badSnapshot(fmt.Errorf("version %d (this build reads %d to %d)", file.Version, snapshotVersion1, snapshotVersion))
	}
	if file.Version < snapshotVersion5 && !file.kvFile.empty() {
		return nil, badSnapshot(fmt.Errorf("version %d with keys", file.Version))
	}
	if file.Version < snapshotVersion6 && slices.ContainsFunc(slices.Concat(file.Locks, file.Elections), isSemaphore) {
		return nil, badSnapshot(fmt.Errorf("version %d with a semaphore", file.Version))
	}
	if file.Version < snapshotVersion && (file.kvFile.owned() || slices.ContainsFunc(file.ACLTokens, limited)) {
		return nil, badSnapshot(fmt.Errorf("version %d with owners of keys or limits of tokens", file.Version))
	}
	if file.Version == snapshotVersion1 {
		file.upgradeV1()
	}
	st, err := file.state()
	if err != nil {
		return nil, badSnapshot(err)
	}
	return st, nil
}

func isSemaphore(l Lock) bool { return l.Limit != 0 || l.Slots != nil }

func limited(t acl.Token) bool { return t.MaxKeys != 0 || t.MaxBytes != 0 }

func badSnapshot(err error) error {
	return fmt.Errorf("%w: %w", ErrBadSnapshot, err)
}

// upgradeV1 gives the lock-delays and waiters of a version-1 snapshot the
// timers it did not record: each is named by the object's modify index
// (any delay or wait started later has a higher index, so none can be
// taken for another) and gets the longest length the API allows.
func (file *snapshotFile) upgradeV1() {
	for _, locks := range [][]Lock{file.Locks, file.Elections} {
		for i := range locks {
			l := &locks[i]
			armed := max(l.ModifyIndex, 1)
			if !l.DelayUntil.IsZero() {
				l.Delay, l.DelayIndex = v1LockDelay, armed
			}
			for j := range l.Waiters {
				l.Waiters[j].Wait, l.Waiters[j].Since = v1Wait, armed
			}
		}
	}
}

// state builds the in-memory state from file, refusing anything the FSM
// could not have produced, since later commands rely on its invariants.
func (file *snapshotFile) state() (*state, error) {
	st := newState()
	st.applied = file.AppliedIndex
	for _, s := range file.Sessions {
		if st.sessions.has(s.ID) || s.ID == "" || s.TTL <= 0 || s.LockDelay < 0 || s.SeqWindow < 0 || s.SeqWindow > MaxSeqWindow {
			return nil, fmt.Errorf("invalid or duplicate session %q", s.ID)
		}
		st.sessions.set(s.ID, s)
		st.tokens.own(s.Owner, 1)
	}
	for id, seqs := range file.Seqs {
		if !st.sessions.has(id) || len(seqs) == 0 {
			return nil, fmt.Errorf("request numbers for unknown session %q", id)
		}
		st.seqs.set(id, &seqTable{last: seqs})
	}
	for id, floor := range file.SeqFloors {
		s, ok := st.sessions.get(id)
		if !ok || s.SeqWindow == 0 || floor == 0 {
			return nil, fmt.Errorf("request-number floor of unknown or unbounded session %q", id)
		}
		t, ok := st.seqs.mut(id)
		if !ok {
			t = &seqTable{last: map[string]uint64{}}
			st.seqs.set(id, t)
		}
		t.floor = floor
	}
	for _, tok := range file.ACLTokens {
		c := Command{Op: OpCreateToken, ACLToken: &tok}
		if r := checkToken(c.Op, c.ACLToken); r != nil {
			return nil, r.Err
		}
		if _, dup := st.tokens.byAccessor[tok.AccessorID]; dup {
			return nil, fmt.Errorf("duplicate ACL token %q", tok.AccessorID)
		}
		if _, dup := st.tokens.byHash[tok.Hash]; dup {
			return nil, fmt.Errorf("ACL token %q: duplicate secret", tok.AccessorID)
		}
		st.tokens.add(tok)
	}
	st.tokens.bootstrapped = file.ACLBootstrapped
	for _, m := range file.Members {
		if _, dup := st.members[m.ID]; dup || m.ID == "" {
			return nil, fmt.Errorf("invalid or duplicate member %q", m.ID)
		}
		st.members[m.ID] = m
	}
	if err := st.locks.load(file.Locks, file.LocksIndex, file.AppliedIndex, st.sessions); err != nil {
		return nil, fmt.Errorf("locks: %w", err)
	}
	if err := st.elections.load(file.Elections, file.ElectionsIndex, file.AppliedIndex, st.sessions); err != nil {
		return nil, fmt.Errorf("elections: %w", err)
	}
	if err := st.kv.load(file.kvFile, file.AppliedIndex, st.sessions); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	st.touched = nil // a restore wakes every watcher anyway
	// The idle numbers of bounded tables follow from what the sessions
	// hold and queue for; more than the window, the FSM never leaves.
	for _, id := range st.seqs.sortedKeys() {
		if s, _ := st.sessions.get(id); s.SeqWindow > 0 {
			t, _ := st.seqs.mut(id)
			if t.idle = st.idleKeys(id, t); len(t.idle) > s.SeqWindow {
				return nil, fmt.Errorf("session %q keeps %d request numbers of objects it let go of, over its window %d", id, len(t.idle), s.SeqWindow)
			}
		}
	}
	return st, nil
}

// load fills an empty space with locks through the same methods commands
// use, so the reverse indexes and the timed set come out as they would.
// index is the space's index, applied the snapshot's applied index.
func (s *space) load(locks []Lock, index, applied uint64, sessions *cowMap[Session]) error {
	if index > applied {
		return fmt.Errorf("index %d after the applied index %d", index, applied)
	}
	for _, in := range locks {
		if s.objs.has(in.Name) || in.Name == "" {
			return fmt.Errorf("empty or duplicate name %q", in.Name)
		}
		if err := s.validate(in, sessions); err != nil {
			return fmt.Errorf("%q: %w", in.Name, err)
		}
		if err := validateOrder(in, index, applied); err != nil {
			return fmt.Errorf("%q: %w", in.Name, err)
		}
		l := &Lock{
			Name:        in.Name,
			Mode:        in.Mode,
			Limit:       in.Limit,
			DelayUntil:  in.DelayUntil.UTC(),
			Delay:       in.Delay,
			DelayIndex:  in.DelayIndex,
			Value:       in.Value,
			ModifyIndex: in.ModifyIndex,
		}
		for _, h := range in.Holders {
			h.AcquiredAt = h.AcquiredAt.UTC()
			l.Holders = append(l.Holders, h)
			addRef(s.held, h.Session, l.Name)
		}
		s.holders += len(l.Holders)
		s.heldObjs += min(len(l.Holders), 1)
		for _, w := range in.Waiters {
			w.Deadline = w.Deadline.UTC()
			s.enqueue(l, w)
		}
		for _, d := range in.Slots {
			d.Until = d.Until.UTC()
			l.Slots = append(l.Slots, d)
		}
		s.objs.set(l.Name, l)
		if l.timed() {
			s.timed[l.Name] = struct{}{}
		}
	}
	s.index = index
	return nil
}

// validate checks one object of a snapshot against the invariants the
// commands keep.
func (s *space) validate(l Lock, sessions *cowMap[Session]) error {
	if err := s.validateLimit(l); err != nil {
		return err
	}
	switch {
	case len(l.Holders) == 0 && len(l.Waiters) == 0 && l.DelayIndex == 0 && len(l.Slots) == 0:
		return errors.New("empty object")
	case (l.DelayIndex != 0) != (l.Delay > 0) || (l.DelayIndex != 0) == l.DelayUntil.IsZero():
		return errors.New("lock-delay without its length, starting entry or shown end")
	case len(l.Holders) == 0 && (l.Mode != "" || l.Value != ""):
		return errors.New("mode or value without a holder")
	case len(l.Holders) > 0 && !validMode(s, l.Mode):
		return fmt.Errorf("mode %q", l.Mode)
	case l.Mode == Exclusive && len(l.Holders) > max(l.Limit, 1):
		return errors.New("several exclusive holders")
	case !s.election && l.Value != "":
		return errors.New("value on a lock")
	case !encodable(l.DelayUntil):
		return fmt.Errorf("lock-delay shown to end in %v", l.DelayUntil)
	}
	seen := make(map[string]bool)
	for _, h := range l.Holders {
		if !sessions.has(h.Session) || seen[h.Session] || h.Token == 0 {
			return fmt.Errorf("holder %q: unknown, repeated or without token", h.Session)
		}
		if !encodable(h.AcquiredAt) {
			return fmt.Errorf("holder %q: acquired in %v", h.Session, h.AcquiredAt)
		}
		seen[h.Session] = true
	}
	for _, w := range l.Waiters {
		if !sessions.has(w.Session) || seen[w.Session] || !validMode(s, w.Mode) {
			return fmt.Errorf("waiter %q: unknown, repeated or of mode %q", w.Session, w.Mode)
		}
		if !encodable(w.Deadline) {
			return fmt.Errorf("waiter %q: shown deadline in %v", w.Session, w.Deadline)
		}
		if !s.election && w.Value != "" {
			return fmt.Errorf("waiter %q: value on a lock", w.Session)
		}
		if w.Wait <= 0 || w.Since == 0 {
			return fmt.Errorf("waiter %q: no wait or starting entry", w.Session)
		}
		seen[w.Session] = true
	}
	return nil
}

// validateLimit checks what a semaphore keeps: a limit within bounds, on a
// lock; exclusive slots, no more held or delayed than the limit; no
// lock-delay of the whole lock; each delayed slot named, timed and shown.
func (s *space) validateLimit(l Lock) error {
	switch {
	case l.Limit < 0 || l.Limit > MaxLimit || (l.Limit > 0 && s.election):
		return fmt.Errorf("limit %d", l.Limit)
	case l.Limit == 0 && l.Slots != nil:
		return errors.New("delayed slots without a limit")
	case l.Limit == 0:
		return nil
	case len(l.Holders)+len(l.Slots) > l.Limit:
		return fmt.Errorf("%d holders and %d delayed slots over the limit %d", len(l.Holders), len(l.Slots), l.Limit)
	case l.DelayIndex != 0 || l.Delay != 0 || !l.DelayUntil.IsZero():
		return errors.New("a semaphore with a lock-delay of the whole lock")
	case len(l.Holders) > 0 && l.Mode != Exclusive:
		return fmt.Errorf("a semaphore held in mode %q", l.Mode)
	case slices.ContainsFunc(l.Waiters, func(w Waiter) bool { return w.Mode != Exclusive }):
		return errors.New("a semaphore's waiter in a mode other than exclusive")
	}
	seen := make(map[SlotDelay]bool)
	for _, d := range l.Slots {
		key := SlotDelay{Session: d.Session, Index: d.Index}
		if d.Session == "" || d.Index == 0 || d.Length <= 0 || d.Until.IsZero() || !encodable(d.Until) || seen[key] {
			return fmt.Errorf("delayed slot of %q from entry %d: unnamed, repeated, without a length or a shown end", d.Session, d.Index)
		}
		seen[key] = true
	}
	return nil
}

// validateOrder checks one object of a snapshot against the order the
// entries that built it keep: it changed last at or before the space's
// index, its tokens are indexes of entries applied, in grant order (so a
// later grant's token is higher than any held), and its queue waits only
// behind a holder or a lock-delay (a hand-off grants the head otherwise).
func validateOrder(l Lock, index, applied uint64) error {
	switch {
	case l.ModifyIndex > index:
		return fmt.Errorf("modify index %d after the space's index %d", l.ModifyIndex, index)
	case slices.ContainsFunc(l.Holders, func(h Holder) bool { return h.Token > applied }):
		return fmt.Errorf("a token after the applied index %d", applied)
	case !slices.IsSortedFunc(l.Holders, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) }):
		return errors.New("holders not in grant order")
	case slices.ContainsFunc(l.Slots, func(d SlotDelay) bool { return d.Index > applied }):
		return fmt.Errorf("a delayed slot after the applied index %d", applied)
	case !slices.IsSortedFunc(l.Slots, func(a, b SlotDelay) int { return cmp.Compare(a.Index, b.Index) }):
		return errors.New("delayed slots not in the order they started")
	case l.DelayIndex == 0 && len(l.Waiters) > 0 && l.admits(l.Waiters[0].Mode):
		return fmt.Errorf("waiter %q queued though it could hold", l.Waiters[0].Session)
	}
	return nil
}

// encodable reports whether t, kept in UTC as the state keeps every time,
// can be written in a snapshot: encoding/json refuses years outside 0 to
// 9999. A time of another zone that encodes may not once in UTC.
func encodable(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

func validMode(s *space, m Mode) bool {
	return m == Exclusive || (m == Shared && !s.election)
}
