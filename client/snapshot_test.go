package client_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/backup"
)

// snapshotServer answers GET /v1/snapshot with file, and with sum in the
// checksum header.
func snapshotServer(t *testing.T, file []byte, sum string) string {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/snapshot" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(api.HeaderSnapshotSHA256, sum)
		_, _ = w.Write(file)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestSnapshot_WritesOnlyACheckedFile(t *testing.T) {
	h := backup.Header{Index: 12, Term: 2, Time: time.Now().UTC().Truncate(time.Second), Version: "v1", Node: "n1"}
	f, good, err := backup.Encode(h, []byte(`{"version":4}`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	info, err := mustClient(t, snapshotServer(t, good, f.SumHex())).Snapshot(ctxT(t, 5*time.Second), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), good) || info.Index != 12 || info.Term != 2 || info.Node != "n1" || !info.Time.Equal(h.Time) ||
		info.Version != "v1" || info.Size != int64(len(good)) || info.SHA256 != f.SumHex() {
		t.Fatalf("info %+v, wrote %d bytes", info, out.Len())
	}

	bad := bytes.Clone(good)
	bad[len(bad)-40] ^= 1
	for name, tc := range map[string]struct {
		file []byte
		sum  string
		want string
	}{
		"damaged file":   {bad, f.SumHex(), "checksum mismatch"},
		"truncated file": {good[:len(good)-5], f.SumHex(), "truncated"},
		"other checksum": {good, strings.Repeat("0", 64), "the leader sent checksum"},
	} {
		out.Reset()
		_, err := mustClient(t, snapshotServer(t, tc.file, tc.sum)).Snapshot(ctxT(t, 5*time.Second), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("%s: err %v, wrote %d bytes; want an error saying %q and nothing written", name, err, out.Len(), tc.want)
		}
	}
}
