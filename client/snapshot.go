package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/backup"
)

// snapshotWait is how long one attempt of Snapshot may take beyond
// Config.RequestTimeout: the leader encodes the whole state, and the file
// may be large.
const snapshotWait = time.Minute

// maxRawBody bounds an answer read whole as bytes: the largest backup file.
const maxRawBody = backup.MaxState + backup.MaxHeader + 1024

// rawBody receives an answer's body and headers as they are, not as JSON.
type rawBody struct {
	body   []byte
	header http.Header
}

// SnapshotInfo describes a backup file Snapshot wrote.
type SnapshotInfo struct {
	// Index is the Raft index of the last entry the state holds: every
	// fencing token in it is at most Index, and a cluster restored from
	// it grants only higher ones.
	Index uint64
	// Term is the term of the leader that took it, Node its id, Time its
	// wall time then, and Version the lockd version it ran.
	Term    uint64
	Node    string
	Time    time.Time
	Version string
	// Size is the file's length in bytes, SHA256 its checksum in hex.
	Size   int64
	SHA256 string
}

// Snapshot asks the leader for a snapshot of the whole state, taken at a
// committed index as a consistent read (GET /v1/snapshot; with ACLs on it
// needs an admin token), checks the file it receives (its magic, version,
// lengths and checksum, and the checksum the leader sent in a header), and
// only then writes it to w, whole. The file is what lockd snapshot save
// writes and lockd snapshot restore reads.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) (SnapshotInfo, error) {
	var rb rawBody
	if err := c.call(ctx, "GET", "/v1/snapshot", nil, &rb, idempotent, snapshotWait); err != nil {
		return SnapshotInfo{}, err
	}
	f, err := backup.Read(bytes.NewReader(rb.body))
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("client: snapshot: %w", err)
	}
	if sent := rb.header.Get(api.HeaderSnapshotSHA256); sent != f.SumHex() {
		return SnapshotInfo{}, fmt.Errorf("client: snapshot: the leader sent checksum %q, the file received has %s", sent, f.SumHex())
	}
	if _, err := w.Write(rb.body); err != nil {
		return SnapshotInfo{}, fmt.Errorf("client: snapshot: write: %w", err)
	}
	h := f.Header
	return SnapshotInfo{Index: h.Index, Term: h.Term, Node: h.Node, Time: h.Time, Version: h.Version, Size: f.Size, SHA256: f.SumHex()}, nil
}
