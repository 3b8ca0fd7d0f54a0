package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockd/lockd/internal/cli"
)

// --wait of lockd lock: forever by default, spelt forever or -1; a
// duration; 0 tries once; anything else is a usage error.
func TestWaitFlag(t *testing.T) {
	parse := func(args ...string) (waitFlag, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		w := waitFlag{forever: true}
		fs.Var(&w, "wait", "")
		err := fs.Parse(args)
		return w, err
	}
	for _, tt := range []struct {
		args []string
		want waitFlag
	}{
		{nil, waitFlag{forever: true}},
		{[]string{"--wait", "forever"}, waitFlag{forever: true}},
		{[]string{"--wait", "-1"}, waitFlag{forever: true}},
		{[]string{"--wait=-1"}, waitFlag{forever: true}},
		{[]string{"--wait", "0"}, waitFlag{}},
		{[]string{"--wait", "90s"}, waitFlag{d: 90 * time.Second}},
	} {
		got, err := parse(tt.args...)
		if err != nil || got != tt.want {
			t.Errorf("%v: %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
	for _, bad := range []string{"-1s", "soon", "-2", ""} {
		if _, err := parse("--wait", bad); err == nil {
			t.Errorf("--wait %q accepted", bad)
		}
	}
	if code := run([]string{"lock", "--wait", "soon", "x"}); code != cli.ExitUsage {
		t.Errorf("lockd lock --wait soon: exit %d, want %d", code, cli.ExitUsage)
	}
}

func TestDefaultSessionName(t *testing.T) {
	n := defaultSessionName([]string{"/usr/local/bin/nightly.sh", "--secret", "x"})
	if !strings.HasSuffix(n, ":nightly.sh") || strings.Contains(n, "secret") || strings.Count(n, ":") < 2 {
		t.Errorf("defaultSessionName = %q, want HOST:PID:nightly.sh", n)
	}
	if n := defaultSessionName(nil); !strings.HasSuffix(n, ":lockd") {
		t.Errorf("defaultSessionName(no command) = %q, want HOST:PID:lockd", n)
	}
	long := strings.Repeat("é", 200) // 400 bytes
	if got := truncateUTF8(long, 255); len(got) > 255 || !utf8.ValidString(got) {
		t.Errorf("truncateUTF8 gave %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
