package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// snapshotVersion is the format version Snapshot writes and Restore reads.
// Bump it for any change an older build would misread.
const snapshotVersion = 1

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
	// Seqs: per session, the last request number per object (seq.go).
	Seqs map[string]map[string]uint64 `json:"seqs,omitempty"`
}

// Snapshot returns the whole state, encoded. Two FSMs that applied the same
// entries return the same bytes.
func (f *FSM) Snapshot() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := f.st
	file := snapshotFile{
		Version:        snapshotVersion,
		AppliedIndex:   st.applied,
		LocksIndex:     st.locks.index,
		ElectionsIndex: st.elections.index,
		Sessions:       sortedValues(st.sessions),
		Locks:          st.locks.list(),
		Elections:      st.elections.list(),
		Members:        sortedValues(st.members),
		Seqs:           st.seqs,
	}
	b, err := json.Marshal(file)
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return b, nil
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
	f.st = st
	f.notify()
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
	if file.Version != snapshotVersion {
		return nil, badSnapshot(fmt.Errorf("version %d (this build reads %d)", file.Version, snapshotVersion))
	}
	st, err := file.state()
	if err != nil {
		return nil, badSnapshot(err)
	}
	return st, nil
}

func badSnapshot(err error) error {
	return fmt.Errorf("%w: %w", ErrBadSnapshot, err)
}

// state builds the in-memory state from file, refusing anything the FSM
// could not have produced, since later commands rely on its invariants.
func (file *snapshotFile) state() (*state, error) {
	st := newState()
	st.applied = file.AppliedIndex
	for _, s := range file.Sessions {
		if _, dup := st.sessions[s.ID]; dup || s.ID == "" || s.TTL <= 0 || s.LockDelay < 0 {
			return nil, fmt.Errorf("invalid or duplicate session %q", s.ID)
		}
		st.sessions[s.ID] = s
	}
	for id, seqs := range file.Seqs {
		if _, ok := st.sessions[id]; !ok || len(seqs) == 0 {
			return nil, fmt.Errorf("request numbers for unknown session %q", id)
		}
		st.seqs[id] = seqs
	}
	for _, m := range file.Members {
		if _, dup := st.members[m.ID]; dup || m.ID == "" {
			return nil, fmt.Errorf("invalid or duplicate member %q", m.ID)
		}
		st.members[m.ID] = m
	}
	if err := st.locks.load(file.Locks, file.LocksIndex, st.sessions); err != nil {
		return nil, fmt.Errorf("locks: %w", err)
	}
	if err := st.elections.load(file.Elections, file.ElectionsIndex, st.sessions); err != nil {
		return nil, fmt.Errorf("elections: %w", err)
	}
	return st, nil
}

// load fills an empty space with locks through the same methods commands
// use, so the reverse indexes and the timed set come out as they would.
func (s *space) load(locks []Lock, index uint64, sessions map[string]Session) error {
	for _, in := range locks {
		if _, dup := s.objs[in.Name]; dup || in.Name == "" {
			return fmt.Errorf("empty or duplicate name %q", in.Name)
		}
		if err := s.validate(in, sessions); err != nil {
			return fmt.Errorf("%q: %w", in.Name, err)
		}
		l := &Lock{
			Name:        in.Name,
			Mode:        in.Mode,
			DelayUntil:  in.DelayUntil.UTC(),
			Value:       in.Value,
			ModifyIndex: in.ModifyIndex,
		}
		for _, h := range in.Holders {
			h.AcquiredAt = h.AcquiredAt.UTC()
			l.Holders = append(l.Holders, h)
			addRef(s.held, h.Session, l.Name)
		}
		for _, w := range in.Waiters {
			w.Deadline = w.Deadline.UTC()
			s.enqueue(l, w)
		}
		s.objs[l.Name] = l
		if len(l.Waiters) > 0 || !l.DelayUntil.IsZero() {
			s.timed[l.Name] = struct{}{}
		}
	}
	s.index = index
	return nil
}

// validate checks one object of a snapshot against the invariants the
// commands keep.
func (s *space) validate(l Lock, sessions map[string]Session) error {
	switch {
	case len(l.Holders) == 0 && len(l.Waiters) == 0 && l.DelayUntil.IsZero():
		return errors.New("empty object")
	case len(l.Holders) == 0 && (l.Mode != "" || l.Value != ""):
		return errors.New("mode or value without a holder")
	case len(l.Holders) > 0 && !validMode(s, l.Mode):
		return fmt.Errorf("mode %q", l.Mode)
	case l.Mode == Exclusive && len(l.Holders) > 1:
		return errors.New("several exclusive holders")
	case !s.election && l.Value != "":
		return errors.New("value on a lock")
	}
	seen := make(map[string]bool)
	for _, h := range l.Holders {
		if _, ok := sessions[h.Session]; !ok || seen[h.Session] || h.Token == 0 {
			return fmt.Errorf("holder %q: unknown, repeated or without token", h.Session)
		}
		seen[h.Session] = true
	}
	for _, w := range l.Waiters {
		if _, ok := sessions[w.Session]; !ok || seen[w.Session] || !validMode(s, w.Mode) {
			return fmt.Errorf("waiter %q: unknown, repeated or of mode %q", w.Session, w.Mode)
		}
		if !s.election && w.Value != "" {
			return fmt.Errorf("waiter %q: value on a lock", w.Session)
		}
		seen[w.Session] = true
	}
	return nil
}

func validMode(s *space, m Mode) bool {
	return m == Exclusive || (m == Shared && !s.election)
}
