package lease

import (
	"log/slog"
	"testing"
	"time"
)

func TestSkewClock_OffsetAndRate(t *testing.T) {
	c := NewSkewClock()
	real0, skew0 := time.Now(), c.Now()
	if d := skew0.Sub(real0); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("fresh SkewClock is %v off", d)
	}
	c.Set(time.Hour, 1)
	if d := time.Until(c.Now()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("after +1h the clock is %v ahead", d)
	}
	if off, rate := c.Skew(); off < time.Hour-time.Second || off > time.Hour+time.Second || rate != 1 {
		t.Fatalf("Skew() = %v, %v", off, rate)
	}
	c.Set(0, 2) // absolute: back to real time, twice as fast
	a, ra := c.Now(), time.Now()
	if d := a.Sub(ra); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("Set(0, 2) left the clock %v off", d)
	}
	time.Sleep(50 * time.Millisecond)
	b, rb := c.Now(), time.Now()
	ratio := float64(b.Sub(a)) / float64(rb.Sub(ra))
	if ratio < 1.8 || ratio > 2.2 {
		t.Fatalf("rate 2 clock advanced %.2fx real time", ratio)
	}
	c.Set(0, -1) // non-positive rate means 1
	a, ra = c.Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	if ratio := float64(c.Now().Sub(a)) / float64(time.Since(ra)); ratio < 0.8 || ratio > 1.2 {
		t.Fatalf("rate reset to 1 advanced %.2fx", ratio)
	}
}

func TestParseHclogLine_Levels(t *testing.T) {
	tests := []struct {
		line  string
		level slog.Level
		msg   string
	}{
		{"[WARN]  raft: heartbeat timeout reached", slog.LevelWarn, "heartbeat timeout reached"},
		{"[ERROR] raft: failed to contact", slog.LevelError, "failed to contact"},
		{"[INFO]  raft: entering follower state", slog.LevelInfo, "entering follower state"},
		{"[DEBUG] raft: x", slog.LevelDebug, "x"},
		{"no level here", slog.LevelInfo, "no level here"},
	}
	for _, tt := range tests {
		level, msg := parseHclogLine([]byte(tt.line))
		if level != tt.level || string(msg) != tt.msg {
			t.Errorf("parseHclogLine(%q) = %v %q, want %v %q", tt.line, level, msg, tt.level, tt.msg)
		}
	}
}
