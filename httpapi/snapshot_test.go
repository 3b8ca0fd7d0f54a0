package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/backup"
)

// snapFake is a fake Service that also takes snapshots.
type snapFake struct {
	*fakeService
	state []byte
	err   error
}

func (f *snapFake) Snapshot(ctx context.Context) ([]byte, uint64, uint64, error) {
	if err := f.record(ctx, "Snapshot"); err != nil {
		return nil, 0, 0, err
	}
	return f.state, 77, 3, f.err
}

func TestSnapshot_ServesACheckedBackupFile(t *testing.T) {
	svc := &snapFake{fakeService: newLeaderFake(), state: []byte(`{"version":4}`)}
	cfg := testConfig(t, svc)
	cfg.Version = "v9.9.9"
	rec := serve(New(cfg), "GET", "/v1/snapshot", "")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("status %d, Content-Type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	f, err := backup.Read(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header
	if h.Index != 77 || h.Term != 3 || h.Version != "v9.9.9" || h.Node != "test" || h.Time.IsZero() || string(f.State) != `{"version":4}` {
		t.Fatalf("file %+v with state %q", h, f.State)
	}
	if got := rec.Header().Get(api.HeaderSnapshotSHA256); got != f.SumHex() {
		t.Fatalf("checksum header %q, file's %q", got, f.SumHex())
	}
	if got := rec.Header().Get(api.HeaderSnapshotIndex); got != "77" {
		t.Fatalf("index header %q", got)
	}
}

func TestSnapshot_ErrorsAreJSON(t *testing.T) {
	svc := &snapFake{fakeService: newLeaderFake(), err: api.Errorf(api.CodeNoLeader, "the leader's master lease has run out")}
	rec := serve(New(testConfig(t, svc)), "GET", "/v1/snapshot", "")
	if e := mustErrorBody(t, rec); rec.Code != http.StatusServiceUnavailable || e.Code != api.CodeNoLeader {
		t.Fatalf("status %d, %+v", rec.Code, e)
	}
	rec = serve(New(testConfig(t, svc)), "POST", "/v1/snapshot", "")
	if e := mustErrorBody(t, rec); rec.Code != http.StatusMethodNotAllowed || !strings.Contains(e.Message, "GET") {
		t.Fatalf("POST: status %d, %+v", rec.Code, e)
	}
}

func TestSnapshot_NoRouteWithoutSnapshotter(t *testing.T) {
	rec := serve(New(testConfig(t, newLeaderFake())), "GET", "/v1/snapshot", "")
	if e := mustErrorBody(t, rec); rec.Code != http.StatusNotFound || e.Code != api.CodeNotFound {
		t.Fatalf("status %d, %+v", rec.Code, e)
	}
}
