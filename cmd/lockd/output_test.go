package main

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/lockd/lockd/internal/cli"
)

// A status command whose output cannot be written (a full disk, here
// /dev/full) fails with exit 1 instead of claiming success.
func TestOutput_WriteErrorFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer func() { _ = full.Close() }()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout = full
	os.Stderr, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Stderr.Close(); os.Stdout, os.Stderr = stdout, stderr }()

	table := func(w io.Writer) { fmt.Fprintln(w, "NAME\tHOLDER") }
	if code := output(true, map[string]string{"name": "a"}, table); code != cli.ExitError {
		t.Errorf("--json to a full disk: exit %d, want %d", code, cli.ExitError)
	}
	if code := output(false, nil, table); code != cli.ExitError {
		t.Errorf("table to a full disk: exit %d, want %d", code, cli.ExitError)
	}
}
