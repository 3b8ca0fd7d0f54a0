package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

// watch prints the first read, then only reads that show something new,
// each with its index; the first read does not wait, the others wait from
// the last index; a session's end ends the watch with exit 0.
func TestWatch_PrintsOneLinePerChange(t *testing.T) {
	reads := []api.Session{
		{ID: "s1", Index: 5},
		{ID: "s1", Index: 6},                            // nothing new: a keepalive or another object's entry
		{ID: "s1", Index: 9, Locks: []string{"a"}},      // a change
		{ID: "s1", Index: 12, Locks: []string{"a"}},     // nothing new
		{ID: "s1", Index: 13, Elections: []string{"e"}}, // a change
	}
	var asked []uint64
	var waits []time.Duration
	w := func(_ context.Context, index uint64, wait time.Duration) (any, uint64, string, error) {
		asked, waits = append(asked, index), append(waits, wait)
		if len(reads) == 0 {
			return nil, 0, "", client.ErrSessionExpired
		}
		s := reads[0]
		reads = reads[1:]
		return s, s.Index, sessionLine(s), nil
	}
	var out strings.Builder
	if code := watch(context.Background(), &out, "test", w, false); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	want := `session=s1 name="" locks=- elections=- index=5
session=s1 name="" locks=a elections=- index=9
session=s1 name="" locks=- elections=e index=13
session=s1 ended
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if want := []uint64{0, 5, 6, 9, 12, 13}; !slices.Equal(asked, want) {
		t.Errorf("asked from indexes %v, want %v", asked, want)
	}
	if waits[0] != 0 || waits[1] != watchWait {
		t.Errorf("waits %v: the first read must not block, the next must", waits[:2])
	}
}
