package lease

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// A data dir keeps the log store it was created with: auto opens what is
// there (wal in a new dir), and asking for the other kind is refused
// rather than starting the node with an empty log.
func TestOpenLogStore_KeepsTheDataDirsStore(t *testing.T) {
	for _, tc := range []struct {
		created, reopened string
		wantFile          string // what the created dir holds
		refused           bool
	}{
		{LogStoreAuto, LogStoreAuto, walDir, false},
		{LogStoreAuto, LogStoreWAL, walDir, false},
		{LogStoreAuto, LogStoreBolt, walDir, true},
		{LogStoreBolt, LogStoreAuto, boltFile, false},
		{LogStoreBolt, LogStoreWAL, boltFile, true},
		{LogStoreWAL, LogStoreBolt, walDir, true},
	} {
		t.Run(tc.created+"-then-"+tc.reopened, func(t *testing.T) {
			dir := t.TempDir()
			s, err := openLogStore(dir, tc.created)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.StoreLog(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetUint64([]byte("k"), 7); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := os.Stat(filepath.Join(dir, tc.wantFile)); err != nil {
				t.Fatalf("created with %q: %v", tc.created, err)
			}
			s, err = openLogStore(dir, tc.reopened)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "other kind") {
					s.Close()
					t.Fatalf("reopened with %q: err %v, want a refusal", tc.reopened, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			last, _ := s.LastIndex()
			v, _ := s.GetUint64([]byte("k"))
			if last != 1 || v != 7 {
				t.Fatalf("reopened with %q: last index %d, k=%d; want 1 and 7", tc.reopened, last, v)
			}
		})
	}
}

// Both stores answer a missing stable key the way bootWait expects.
func TestOpenLogStore_MissingKey(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		s, err := openLogStore(t.TempDir(), kind)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.GetUint64([]byte("absent"))
		s.Close()
		if (err != nil && !isNotFound(err)) || v != 0 {
			t.Fatalf("%s: absent key: %d, %v", kind, v, err)
		}
	}
}
