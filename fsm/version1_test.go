package fsm

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
)

// version1Log is testdata/version1-log.json.gz: a random log of version-1
// entries (ticks included), what the last build that wrote version 1
// answered to each, and the snapshot it ended with.
type version1Log struct {
	Entries []string `json:"entries"`
	Results []struct {
		Index    uint64   `json:"index"`
		Err      string   `json:"err,omitempty"`
		Granted  bool     `json:"granted,omitempty"`
		Token    uint64   `json:"token,omitempty"`
		Released []string `json:"released,omitempty"`
		Resigned []string `json:"resigned,omitempty"`
		Session  string   `json:"session,omitempty"`
	} `json:"results"`
	Snapshot json.RawMessage `json:"snapshot"`
}

// readVersion1Log reads testdata/version1-log.json.gz.
func readVersion1Log(t testing.TB) version1Log {
	t.Helper()
	var rec version1Log
	readGzipJSON(t, "testdata/version1-log.json.gz", &rec)
	return rec
}

// readGzipJSON decodes the gzipped JSON file at path into out.
func readGzipJSON(t testing.TB, path string, out any) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	zr, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// errKind names the package error err wraps, as the recorded results do.
func errKind(err error) string {
	for _, e := range []error{ErrBadCommand, ErrSessionNotFound, ErrSessionExists, ErrLockHeld, ErrNotHolder, ErrLockDelay, ErrModeConflict} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other"
	}
	return ""
}

// A log written by the build that decided lock-delays and waits by wall
// time replays here to the same answers, tokens and final state (apart
// from the timer fields this build adds).
func TestVersion1Log_ReplaysAsRecorded(t *testing.T) {
	rec := readVersion1Log(t)
	f := New()
	delays := 0
	for i, enc := range rec.Entries {
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		r := f.Apply(uint64(i+1), data)
		want := rec.Results[i]
		sess := ""
		if r.Session != nil {
			sess = r.Session.ID
		}
		if r.Index != want.Index || errKind(r.Err) != want.Err || r.Granted != want.Granted || r.Token != want.Token ||
			!reflect.DeepEqual(r.Released, want.Released) || !reflect.DeepEqual(r.Resigned, want.Resigned) || sess != want.Session {
			t.Fatalf("entry %d: got %s, recorded %+v", i+1, describe(r), want)
		}
		if errors.Is(r.Err, ErrLockDelay) {
			delays++
		}
	}
	if delays == 0 {
		t.Fatal("the recorded log never hit a lock-delay")
	}
	var got, old snapshotFile
	if err := json.Unmarshal(mustSnapshot(t, f), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec.Snapshot, &old); err != nil {
		t.Fatal(err)
	}
	got.Version = old.Version
	for _, locks := range [][]Lock{got.Locks, got.Elections} {
		for i := range locks {
			locks[i].Delay, locks[i].DelayIndex = 0, 0
			for j := range locks[i].Waiters {
				locks[i].Waiters[j].Wait, locks[i].Waiters[j].Since = 0, 0
			}
		}
	}
	if !reflect.DeepEqual(got, old) {
		a, _ := json.Marshal(got)
		t.Fatalf("final state differs from the recorded one:\n got %s\nwant %s", a, rec.Snapshot)
	}
}
