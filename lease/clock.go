package lease

import (
	"sync"
	"time"
)

// Clock is the node's source of time. Every timer in lease measures
// durations with it, so tests and the fault harness can skew a node's clock.
// Now must return times carrying a monotonic reading (as time.Now does), so
// that durations between them are immune to wall-clock steps. No decision in
// lease or fsm depends on the wall part of any reading: the wall time a node
// stamps into commands is for display only (see WallClock).
type Clock interface {
	Now() time.Time
}

// WallClock is implemented by a Clock whose wall time can differ from the
// wall part of Now, the way a system clock stepped by NTP differs from the
// monotonic clock the timers run on. The node stamps Wall into commands; a
// Clock without it stamps Now.
type WallClock interface {
	Wall() time.Time
}

// wallNow returns the wall time c shows, without a monotonic reading.
func wallNow(c Clock) time.Time {
	if w, ok := c.(WallClock); ok {
		return w.Wall().Round(0)
	}
	return c.Now().Round(0)
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SkewClock is a clock whose offset and rate relative to the system clock
// can be changed while it runs, and whose wall time can be stepped apart
// from the time its timers measure. It exists for fault injection (clock
// skew, clock rate change, wall-clock step); production nodes use
// SystemClock.
type SkewClock struct {
	mu       sync.Mutex
	origin   time.Time // real time at the last change
	base     time.Time // skewed time at the last change
	rate     float64
	wallStep time.Duration // added to Wall only
	onChange []func()      // called after every Set
}

// NewSkewClock returns a SkewClock that starts equal to the system clock and
// runs at rate 1.
func NewSkewClock() *SkewClock {
	now := time.Now()
	return &SkewClock{origin: now, base: now, rate: 1}
}

// Now returns the skewed time. Offset and rate move its monotonic reading
// too, so they change what the node's timers measure; the wall step does
// not.
func (c *SkewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

func (c *SkewClock) nowLocked(now time.Time) time.Time {
	elapsed := now.Sub(c.origin)
	return c.base.Add(time.Duration(float64(elapsed) * c.rate))
}

// Wall returns the wall time the node shows and stamps: Now plus the wall
// step, without a monotonic reading.
func (c *SkewClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now()).Round(0).Add(c.wallStep)
}

// Set makes the clock read real time + offset (which may be negative) from
// now on, advancing at rate (1 = real time, 1.5 = 50% fast). A non-positive
// rate is treated as 1. The wall step stays as it is.
func (c *SkewClock) Set(offset time.Duration, rate float64) {
	if rate <= 0 {
		rate = 1
	}
	c.mu.Lock()
	now := time.Now()
	c.base = now.Add(offset)
	c.origin = now
	c.rate = rate
	hooks := append([]func(){}, c.onChange...)
	c.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// OnChange registers f to be called after every Set, once the new offset
// and rate are in force: the node reloads Raft's timers and revises its
// lease log line with it.
func (c *SkewClock) OnChange(f func()) {
	c.mu.Lock()
	c.onChange = append(c.onChange, f)
	c.mu.Unlock()
}

// RealTime returns the real time (with a monotonic reading) at which the
// clock, keeping its current offset and rate, shows t.
func (c *SkewClock) RealTime(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origin.Add(time.Duration(float64(t.Sub(c.base)) / c.rate))
}

// Rate returns the clock's current rate.
func (c *SkewClock) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// Skew returns the clock's current offset from real time and its rate.
func (c *SkewClock) Skew() (offset time.Duration, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	return c.nowLocked(now).Sub(now), c.rate
}

// SetWallStep steps the wall time by step from Now's (an absolute setting:
// 0 undoes every earlier step), as an NTP step of the system clock would.
// Timers do not see it.
func (c *SkewClock) SetWallStep(step time.Duration) {
	c.mu.Lock()
	c.wallStep = step
	c.mu.Unlock()
}

// WallStep returns the current wall step.
func (c *SkewClock) WallStep() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wallStep
}
