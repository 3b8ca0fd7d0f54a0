package lease

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newRaftLogger bridges raft's hclog output to slog: hclog formats each line,
// slogWriter parses its level and re-logs the message under component=raft.
func newRaftLogger(l *slog.Logger, level slog.Level) hclog.Logger {
	hl := hclog.LevelFromString(levelName(level))
	return hclog.New(&hclog.LoggerOptions{
		Name:            "raft",
		Level:           hl,
		Output:          &slogWriter{l: l.With("component", "raft")},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

func levelName(l slog.Level) string {
	switch {
	case l <= slog.LevelDebug:
		return "debug"
	case l <= slog.LevelInfo:
		return "info"
	case l <= slog.LevelWarn:
		return "warn"
	}
	return "error"
}

// slogWriter receives hclog's formatted lines ("[WARN]  raft: message: k=v").
type slogWriter struct{ l *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		level, msg := parseHclogLine(line)
		w.l.Log(context.Background(), expectedLevel(level, msg), string(msg))
	}
	return len(p), nil
}

// expectedLevel lowers to debug what raft logs as an error but is the
// expected end of a connection this node closed itself while it stops (a
// clean removal or shutdown): its transport's readers see their
// connections closed under them.
func expectedLevel(level slog.Level, msg []byte) slog.Level {
	if level >= slog.LevelWarn && bytes.Contains(msg, []byte("use of closed network connection")) {
		return slog.LevelDebug
	}
	return level
}

func parseHclogLine(line []byte) (slog.Level, []byte) {
	line = bytes.TrimSpace(line)
	levels := []struct {
		tag   string
		level slog.Level
	}{
		{"[TRACE]", slog.LevelDebug - 4}, {"[DEBUG]", slog.LevelDebug},
		{"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERROR]", slog.LevelError},
	}
	for _, lv := range levels {
		if bytes.HasPrefix(line, []byte(lv.tag)) {
			msg := bytes.TrimSpace(line[len(lv.tag):])
			msg = bytes.TrimPrefix(msg, []byte("raft: "))
			return lv.level, msg
		}
	}
	return slog.LevelInfo, line
}
