package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/fsm"
)

// Snapshot reads the whole state as a consistent read does: on the leader,
// after a quorum confirmation that started after the call, so that the
// state holds every write acknowledged before it. It returns the state in
// fsm's snapshot encoding, the index of the last entry it holds (no fencing
// token in it is higher) and the leader's term. Freezing the state costs
// the same whatever its size; encoding it runs while entries go on
// applying (fsm.View).
func (n *Node) Snapshot(ctx context.Context) (state []byte, index, term uint64, err error) {
	t, err := n.leading()
	if err != nil {
		return nil, 0, 0, err
	}
	if err := t.confirm(ctx); err != nil {
		return nil, 0, 0, err
	}
	v := n.fsm.View()
	if state, err = v.Marshal(); err != nil {
		return nil, 0, 0, err
	}
	return state, v.AppliedIndex(), t.raftTerm, nil
}

// seedTerm is the term of the Raft snapshot Seed writes: the new cluster's
// first, not the term the old cluster had reached. A seeded node starts
// with current term 0 and elects its first leader in term 1; were the
// snapshot's term higher, the entries after it would carry lower terms
// than it, and a node holding only the snapshot would count as more up to
// date than nodes holding later committed entries, and could win an
// election without them.
const seedTerm = 1

// ErrHasState is returned by Seed for a data dir that holds Raft state.
var ErrHasState = errors.New("lease: the data dir already holds Raft state")

// Seed writes state (fsm's snapshot encoding, as a backup file carries it)
// into dataDir as the Raft snapshot a new cluster starts from, with voters
// as its configuration. A node then started on dataDir (with the ID of one
// of voters, at its address) has the state and no log, and neither
// bootstraps nor waits to join: the voters, each seeded alike, elect a
// leader among themselves.
//
// The Raft snapshot sits at the state's own index, or at floor if that is
// higher, so that every entry the new cluster appends, and so every
// fencing token it grants, is above any token in the state (and above
// floor). The state is reseeded at now (fsm.Reseed: the old member table
// goes, lock-delays and waits show a full length from now);
// sessions need nothing, since a new leader starts every session on a full
// TTL, nor do the lock-delays and waits themselves, which it runs for their
// full length from when it starts. Sessions keep their ids.
//
// Seed refuses a data dir that holds Raft state (ErrHasState), voters that
// are empty or repeat an id or address, and a state fsm refuses (wrapping
// fsm.ErrBadSnapshot). It returns the snapshot's index.
func Seed(dataDir string, voters []Peer, state []byte, now time.Time, floor uint64) (uint64, error) {
	if err := checkVoters(voters); err != nil {
		return 0, err
	}
	if has, what, err := HasState(dataDir); err != nil {
		return 0, err
	} else if has {
		return 0, fmt.Errorf("%w: %s (restore seeds a new node: give it an empty data dir)", ErrHasState, what)
	}
	f := fsm.New()
	if err := f.Restore(bytes.NewReader(state)); err != nil {
		return 0, err
	}
	if f.AppliedIndex() == 0 {
		return 0, fmt.Errorf("%w: the state is at index 0, before any entry", fsm.ErrBadSnapshot)
	}
	f.Reseed(now, floor)
	index := f.AppliedIndex()
	data, err := f.Snapshot()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return 0, fmt.Errorf("lease: data dir: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hclog.NewNullLogger())
	if err != nil {
		return 0, fmt.Errorf("lease: snapshot store: %w", err)
	}
	var conf raft.Configuration
	for _, p := range voters {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	// The store asks a transport only to encode the voters' addresses
	// for the oldest snapshot readers; an in-memory one does that.
	_, trans := raft.NewInmemTransport("")
	defer func() { _ = trans.Close() }() // in memory: nothing to lose
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, seedTerm, conf, index, trans)
	if err != nil {
		return 0, fmt.Errorf("lease: create snapshot: %w", err)
	}
	if _, err := sink.Write(data); err != nil {
		_ = sink.Cancel() // the write error is the one to report
		return 0, fmt.Errorf("lease: write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("lease: write snapshot: %w", err)
	}
	return index, nil
}

func checkVoters(voters []Peer) error {
	if len(voters) == 0 {
		return errors.New("lease: seed: no voters")
	}
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, p := range voters {
		if p.ID == "" || p.Addr == "" || ids[p.ID] || addrs[p.Addr] {
			return fmt.Errorf("lease: seed: voter %q at %q: empty, or a repeated id or address", p.ID, p.Addr)
		}
		ids[p.ID], addrs[p.Addr] = true, true
	}
	return nil
}

// HasState reports whether dataDir holds Raft state a node would start
// from: a log store of either kind, or a snapshot. what names it.
func HasState(dataDir string) (has bool, what string, err error) {
	for _, name := range []string{boltFile, walDir} {
		p := filepath.Join(dataDir, name)
		if _, err := os.Stat(p); err == nil {
			return true, p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return false, "", fmt.Errorf("lease: %w", err)
		}
	}
	p := filepath.Join(dataDir, "snapshots")
	entries, err := os.ReadDir(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, "", fmt.Errorf("lease: %w", err)
	}
	if len(entries) > 0 {
		return true, p, nil
	}
	return false, "", nil
}
