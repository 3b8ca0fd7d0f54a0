package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	var b bytes.Buffer
	printVersion(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "lockd "+version || !strings.HasPrefix(lines[1], "commit ") || !strings.HasPrefix(lines[2], runtime.Version()+" ") {
		t.Fatalf("lockd version printed %q", b.String())
	}
}
