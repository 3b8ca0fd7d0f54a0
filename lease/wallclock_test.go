package lease

import (
	"testing"
	"time"
)

func TestSkewClock_WallStepMovesOnlyTheWall(t *testing.T) {
	c := NewSkewClock()
	for _, step := range []time.Duration{24 * time.Hour, -24 * time.Hour} {
		c.SetWallStep(step)
		if got := c.WallStep(); got != step {
			t.Fatalf("WallStep() = %v, want %v", got, step)
		}
		mono0, wall0 := c.Now(), wallNow(c)
		if d := wall0.Sub(time.Now().Round(0)); d < step-time.Second || d > step+time.Second {
			t.Fatalf("step %v: the stamped wall time is %v from real time", step, d)
		}
		if d := time.Since(mono0); d < -time.Second || d > time.Second {
			t.Fatalf("step %v moved Now by %v; timers must not see a wall step", step, d)
		}
		time.Sleep(20 * time.Millisecond)
		if el := c.Now().Sub(mono0); el < 15*time.Millisecond || el > time.Second {
			t.Fatalf("step %v: Now advanced %v over 20ms", step, el)
		}
		if off, rate := c.Skew(); off < -time.Millisecond || off > time.Millisecond || rate != 1 {
			t.Fatalf("step %v changed the skew: %v x%v", step, off, rate)
		}
	}
	c.Set(time.Minute, 1) // skewing keeps the step
	if c.WallStep() != -24*time.Hour {
		t.Fatalf("Set dropped the wall step: %v", c.WallStep())
	}
	if d := wallNow(c).Sub(time.Now().Round(0)); d < -24*time.Hour+time.Minute-time.Second || d > -24*time.Hour+time.Minute+time.Second {
		t.Fatalf("wall with offset 1m and step -24h is %v from real time", d)
	}
}

func TestWallNow_PlainClockStampsNow(t *testing.T) {
	c := &manualClock{now: time.Unix(1000, 0)}
	if got := wallNow(c); !got.Equal(time.Unix(1000, 0)) {
		t.Fatalf("wallNow = %v", got)
	}
}
