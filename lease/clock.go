package lease

import (
	"sync"
	"time"
)

// Clock is the node's source of time. Every timer in lease measures
// durations with it, so tests and the fault harness can skew a node's clock.
// Now must return times carrying a monotonic reading (as time.Now does), so
// that durations between them are immune to wall-clock steps; the wall part
// is what gets stamped into commands.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SkewClock is a clock whose offset and rate relative to the system clock
// can be changed while it runs. It exists for fault injection (clock skew
// and clock rate change); production nodes use SystemClock.
type SkewClock struct {
	mu     sync.Mutex
	origin time.Time // real time at the last change
	base   time.Time // skewed time at the last change
	rate   float64
}

// NewSkewClock returns a SkewClock that starts equal to the system clock and
// runs at rate 1.
func NewSkewClock() *SkewClock {
	now := time.Now()
	return &SkewClock{origin: now, base: now, rate: 1}
}

// Now returns the skewed time.
func (c *SkewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

func (c *SkewClock) nowLocked(real time.Time) time.Time {
	elapsed := real.Sub(c.origin)
	return c.base.Add(time.Duration(float64(elapsed) * c.rate))
}

// Set makes the clock read real time + offset (which may be negative) from
// now on, advancing at rate (1 = real time, 1.5 = 50% fast). A non-positive
// rate is treated as 1.
func (c *SkewClock) Set(offset time.Duration, rate float64) {
	if rate <= 0 {
		rate = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.base = real.Add(offset)
	c.origin = real
	c.rate = rate
}

// Skew returns the clock's current offset from real time and its rate.
func (c *SkewClock) Skew() (offset time.Duration, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	return c.nowLocked(real).Sub(real), c.rate
}
