package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/backup"
)

// Snapshotter is what a Service offers to serve GET /v1/snapshot; the
// route exists only when the Service implements it (lease.Node does).
type Snapshotter interface {
	// Snapshot returns the whole state, read as a consistent read (on the
	// leader, after a quorum confirmation that began after the call), in
	// fsm's snapshot encoding, with the index of the last entry it holds
	// and the leader's term.
	Snapshot(ctx context.Context) (state []byte, index, term uint64, err error)
}

// rawAnswer is a route's answer written as it is rather than as JSON.
type rawAnswer struct {
	header http.Header
	body   []byte
}

func (a *rawAnswer) write(w http.ResponseWriter, status int) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(a.body)
}

// snapshot serves GET /v1/snapshot: a backup file (internal/backup) of
// the state at a committed index. The file is built whole before the
// status line is sent, so that a failure is still answered with a JSON
// error rather than a cut body.
func (s *Server) snapshot(r *http.Request) (any, error) {
	state, index, term, err := s.svc.(Snapshotter).Snapshot(r.Context())
	if err != nil {
		return nil, err
	}
	h := backup.Header{Index: index, Term: term, Time: time.Now().UTC(), Version: s.version, Node: s.nodeID}
	f, body, err := backup.Encode(h, state)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="lockd-%d.snap"`, index))
	hdr.Set(api.HeaderSnapshotSHA256, f.SumHex())
	hdr.Set(api.HeaderSnapshotIndex, strconv.FormatUint(index, 10))
	return &rawAnswer{header: hdr, body: body}, nil
}
