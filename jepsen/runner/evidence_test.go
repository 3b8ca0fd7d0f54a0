package runner

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// TestEvidence_RoundTrip saves a run's evidence and reads it back whole,
// but for the operations (history.jsonl holds them) and the directory.
func TestEvidence_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadEvidence(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v, want fs.ErrNotExist", err)
	}
	ev := Evidence{
		Ops:        []history.Op{{ID: 1, Lock: "l", Kind: history.Acquire}},
		Holds:      []history.Hold{{Client: -1, Lock: traffic.FencedLock, Session: "c", Token: 3, From: 5, To: 9, Paused: true, PausedAt: 7}},
		Events:     []history.Event{{At: 1, What: "inject kill-node: kill -9 n1"}},
		Fenced:     true,
		Grants:     []traffic.Grant{{Client: "child-0", Session: "c", Token: 3, Call: 1, Return: 4, Child: true}},
		Writes:     []traffic.Write{{Seq: 0, At: 6, Client: "child-0", Session: "c", Token: 3, Accepted: true}},
		Durability: validate.Verdict{Checker: validate.Durability, Violations: 1, Details: []string{"lost"}},
		Samples:    []validate.Sample{{Round: 1, At: 2, Node: "n1", State: "Leader", Term: 2}},
		Classic:    true,
		Dir:        dir,
	}
	if err := SaveEvidence(dir, ev); err != nil {
		t.Fatal(err)
	}
	got, err := LoadEvidence(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := ev
	want.Ops, want.Dir = nil, ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
}
