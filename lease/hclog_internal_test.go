package lease

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRaftLogger_ClosedConnectionsOfAStopAreNotErrors: a connection this
// node closed while stopping (a clean removal, a shutdown) is a debug
// line, not raft's ERROR; other errors stay errors.
func TestRaftLogger_ClosedConnectionsOfAStopAreNotErrors(t *testing.T) {
	var out bytes.Buffer
	hl := newRaftLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelDebug)
	hl.Error("failed to decode incoming command", "error", "read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection")
	hl.Error("failed to appendEntries to", "peer", "n2", "error", "EOF")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[1], "level=ERROR") {
		t.Fatalf("logged:\n%s\nwant the closed connection at DEBUG and the other error at ERROR", out.String())
	}
}
