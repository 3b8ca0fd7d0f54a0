package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/fsm"
	"github.com/lockd/lockd/internal/backup"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/lease"
)

const snapshotUsage = `lockd snapshot save FILE [--force] [--addr ADDRS] [--json]
  lockd snapshot inspect FILE [--json]
  lockd snapshot restore FILE [--min-index N] [the node's lockd serve flags: --id, --data, --peer, --initial-cluster, ...]
save asks the leader for a snapshot (an admin token with ACLs on), checks it and writes FILE;
restore seeds the empty data dir of a node of a NEW cluster from FILE (docs/operations.md, "Backup and restore").`

// snapshotTimeout bounds lockd snapshot save.
const snapshotTimeout = 2 * time.Minute

// snapshotCmd runs "lockd snapshot save|inspect|restore".
func snapshotCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "lockd snapshot: want save, inspect or restore\nusage: %s\n", snapshotUsage)
		return cli.ExitUsage
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:], stdout, stderr)
	case "inspect":
		return snapshotInspect(args[1:], stdout, stderr)
	case "restore":
		return snapshotRestore(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, "usage: %s\n", snapshotUsage)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "lockd snapshot: unknown verb %q (want save, inspect or restore)\nusage: %s\n", args[0], snapshotUsage)
	return cli.ExitUsage
}

// snapshotFlagSet returns a FlagSet for one verb, writing to stderr.
func snapshotFlagSet(verb string, stderr io.Writer) *flag.FlagSet {
	fs := cli.NewFlagSet("lockd snapshot "+verb, snapshotUsage)
	fs.SetOutput(stderr)
	return fs
}

// oneFile parses args (flags before or after FILE) and returns FILE.
func oneFile(fs *flag.FlagSet, args []string, stderr io.Writer) (string, int) {
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return "", cli.FlagErr(err)
	}
	if len(pos) != 1 || len(command) > 0 {
		fmt.Fprintf(stderr, "%s: want exactly one FILE\n", fs.Name())
		return "", cli.ExitUsage
	}
	return pos[0], -1
}

func snapshotSave(args []string, stdout, stderr io.Writer) int {
	fs := snapshotFlagSet("save", stderr)
	var f clientFlags
	f.register(fs, true)
	force := fs.Bool("force", false, "overwrite FILE if it exists")
	path, code := oneFile(fs, args, stderr)
	if code >= 0 {
		return code
	}
	if _, err := os.Lstat(path); err == nil && !*force {
		fmt.Fprintf(stderr, "%s: %s exists; give --force to overwrite it\n", fs.Name(), path)
		return cli.ExitError
	}
	c, err := f.client()
	if err != nil {
		return fail(stderr, fs.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	file, err := saveFile(path, func(w io.Writer) error {
		_, err := c.Snapshot(ctx, w)
		return err
	})
	if err != nil {
		return fail(stderr, fs.Name(), err)
	}
	if f.jsonOut {
		return writeJSON(stdout, describe(path, file, nil))
	}
	fmt.Fprintf(stdout, "saved %s: index %d, term %d, %d bytes, sha256 %s\n", path, file.Header.Index, file.Header.Term, file.Size, file.SumHex())
	return cli.ExitOK
}

// saveFile writes a backup file to path.tmp with write, syncs it, reads it
// back and checks it, and only then renames it to path (and syncs the
// directory), so that path is either the old file or a whole, checked new
// one. It returns the file as read back.
func saveFile(path string, write func(io.Writer) error) (*backup.File, error) {
	tmp := path + ".tmp"
	// The file holds session ids and ACL token hashes: the owner's only.
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.Remove(tmp) // best effort: the error being returned says what went wrong
		}
	}()
	err = write(out)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	file, err := readFile(tmp)
	if err != nil {
		return nil, fmt.Errorf("the file written does not read back: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	keep = true
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		// The rename is made durable if the directory can be synced;
		// the file itself already is, and checked.
		_ = dir.Sync()
		_ = dir.Close()
	}
	return file, nil
}

// readFile reads and checks the backup file at path.
func readFile(path string) (*backup.File, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = in.Close() }() // read only: a close error loses nothing
	f, err := backup.Read(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// stateCounts is what a backup file's state holds.
type stateCounts struct {
	Sessions        int    `json:"sessions"`
	Locks           int    `json:"locks"`
	LocksHeld       int    `json:"locks_held"`
	Elections       int    `json:"elections"`
	ElectionsLed    int    `json:"elections_led"`
	Waiters         int    `json:"waiters"`
	ACLTokens       int    `json:"acl_tokens"`
	HighestToken    uint64 `json:"highest_fencing_token"`
	LockDelays      int    `json:"lock_delays"`
	AppliedIndex    uint64 `json:"applied_index"`
	ACLBootstrapped bool   `json:"acl_bootstrapped"`
}

// countState decodes a state as a node restoring it would, refusing what
// a node would refuse, and counts what it holds.
func countState(state []byte) (stateCounts, error) {
	f := fsm.New()
	if err := f.Restore(bytes.NewReader(state)); err != nil {
		return stateCounts{}, err
	}
	c := stateCounts{Sessions: f.SessionCount(), ACLTokens: len(f.Tokens()), AppliedIndex: f.AppliedIndex(), ACLBootstrapped: f.ACLBootstrapped()}
	count := func(objs []fsm.Lock, held *int) {
		for _, l := range objs {
			if len(l.Holders) > 0 {
				*held++
			}
			if l.DelayIndex != 0 {
				c.LockDelays++
			}
			c.LockDelays += len(l.Slots) // a semaphore's delayed slots
			c.Waiters += len(l.Waiters)
			for _, h := range l.Holders {
				c.HighestToken = max(c.HighestToken, h.Token)
			}
		}
	}
	locks, elections := f.Locks(), f.Elections()
	c.Locks, c.Elections = len(locks), len(elections)
	count(locks, &c.LocksHeld)
	count(elections, &c.ElectionsLed)
	return c, nil
}

// fileReport is what save --json and inspect print.
type fileReport struct {
	File    string        `json:"file"`
	Format  int           `json:"format_version"`
	Header  backup.Header `json:"header"`
	Size    int64         `json:"size"`
	SHA256  string        `json:"sha256"`
	Content *stateCounts  `json:"content,omitempty"`
}

func describe(path string, f *backup.File, c *stateCounts) fileReport {
	return fileReport{File: path, Format: backup.FormatVersion, Header: f.Header, Size: f.Size, SHA256: f.SumHex(), Content: c}
}

func writeJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return cli.ExitError
	}
	return cli.ExitOK
}

func snapshotInspect(args []string, stdout, stderr io.Writer) int {
	fs := snapshotFlagSet("inspect", stderr)
	jsonOut := fs.Bool("json", false, "print JSON for scripts")
	path, code := oneFile(fs, args, stderr)
	if code >= 0 {
		return code
	}
	f, err := readFile(path)
	if err != nil {
		return fail(stderr, fs.Name(), err)
	}
	c, err := countState(f.State)
	if err != nil {
		return fail(stderr, fs.Name(), fmt.Errorf("%s: the checksum holds but the state does not decode: %w", path, err))
	}
	r := describe(path, f, &c)
	if *jsonOut {
		return writeJSON(stdout, r)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	h := f.Header
	fmt.Fprintf(tw, "file\t%s\nformat\t%s version %d\nsize\t%d bytes\nsha256\t%s\n", path, backup.Magic, backup.FormatVersion, f.Size, r.SHA256)
	fmt.Fprintf(tw, "index\t%d\nterm\t%d\ntaken\t%s by %s\nlockd version\t%s\n", h.Index, h.Term, h.Time.Format(time.RFC3339), h.Node, h.Version)
	fmt.Fprintf(tw, "sessions\t%d\nlocks\t%d (%d held, %d in lock-delay)\nelections\t%d (%d led)\nwaiters\t%d\n",
		c.Sessions, c.Locks, c.LocksHeld, c.LockDelays, c.Elections, c.ElectionsLed, c.Waiters)
	fmt.Fprintf(tw, "ACL tokens\t%d\nhighest fencing token\t%d\n", c.ACLTokens, c.HighestToken)
	tw.Flush()
	return cli.ExitOK
}

func snapshotRestore(args []string, stdout, stderr io.Writer) int {
	fs := snapshotFlagSet("restore", stderr)
	var f serveFlags
	f.register(fs)
	floor := fs.Uint64("min-index", 0, "start the new cluster's Raft index, and so its fencing tokens, above this (the last index the old cluster reached, if it ran on after the backup)")
	path, code := oneFile(fs, args, stderr)
	if code >= 0 {
		return code
	}
	switch {
	case f.join != "":
		fmt.Fprintf(stderr, "%s: --join: a node that joins gets the state from the cluster; restore only the nodes of --initial-cluster (or a single node)\n", fs.Name())
		return cli.ExitUsage
	case f.election != "raft":
		fmt.Fprintf(stderr, "%s: --election %s keeps no replicated state to restore; restore seeds Raft mode only\n", fs.Name(), f.election)
		return cli.ExitUsage
	}
	voters, err := restoreVoters(&f)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return cli.ExitUsage
	}
	file, err := readFile(path)
	if err != nil {
		return fail(stderr, fs.Name(), err)
	}
	c, err := countState(file.State)
	if err != nil {
		return fail(stderr, fs.Name(), fmt.Errorf("%s: the checksum holds but the state does not decode: %w", path, err))
	}
	index, err := lease.Seed(f.dataDir, voters, file.State, time.Now(), *floor)
	if err != nil {
		if errors.Is(err, lease.ErrHasState) {
			return fail(stderr, fs.Name(), fmt.Errorf("%w; nothing was written", err))
		}
		return fail(stderr, fs.Name(), err)
	}
	fmt.Fprintf(stdout, "restored %s into %s as node %s of a new cluster of %d voter(s): index %d, %d sessions, %d locks, %d elections, %d waiters\n",
		path, f.dataDir, f.id, len(voters), index, c.Sessions, c.Locks, c.Elections, c.Waiters)
	fmt.Fprintf(stdout, "now start it with lockd serve and the same flags; every token it grants will be above %d\n", index)
	return cli.ExitOK
}

// restoreVoters returns the voters of the new cluster: --initial-cluster,
// which must name --id, or else the node alone at its peer address.
func restoreVoters(f *serveFlags) ([]lease.Peer, error) {
	peers, err := parseInitialCluster(f.initialCluster)
	if err != nil {
		return nil, err
	}
	if len(peers) == 0 {
		addr := f.advertisePeer
		if addr == "" {
			addr = f.peerAddr
		}
		return []lease.Peer{{ID: f.id, Addr: addr}}, nil
	}
	for _, p := range peers {
		if p.ID == f.id {
			return peers, nil
		}
	}
	return nil, fmt.Errorf("--id %s is not one of --initial-cluster %s", f.id, f.initialCluster)
}
