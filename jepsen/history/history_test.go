package history

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestClockBase: a time read with Monotonic, less the recorder's
// ClockBase, is the recorder's own time within a millisecond, in this
// process and in another one (the child processes of the harness stamp
// their operations so).
func TestClockBase(t *testing.T) {
	if os.Getenv("LOCKD_HISTORY_MONOTONIC_CHILD") == "1" {
		_, _ = os.Stdout.WriteString(strconv.FormatInt(Monotonic(), 10))
		os.Exit(0)
	}
	r := NewRecorder()
	time.Sleep(20 * time.Millisecond)
	base := r.ClockBase()
	before := r.Now()
	got := Monotonic() - base
	after := r.Now()
	if got < before-int64(time.Millisecond) || got > after+int64(time.Millisecond) {
		t.Fatalf("Monotonic() - ClockBase() = %d, recorder's time between %d and %d", got, before, after)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestClockBase$")
	cmd.Env = append(os.Environ(), "LOCKD_HISTORY_MONOTONIC_CHILD=1")
	before = r.Now()
	out, err := cmd.Output()
	after = r.Now()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.ParseInt(string(out), 10, 64)
	if err != nil {
		t.Fatalf("the child wrote %q: %v", out, err)
	}
	if got := child - base; got < before || got > after {
		t.Fatalf("the child's reading is %d on the recorder's clock, outside its run %d..%d", got, before, after)
	}
}
