package failpoint

import (
	"context"
	"testing"
	"time"
)

// TestFaultClockDrift measures what the clock-drift fault does to a node's
// clock: it runs at a rate within the drift bound while injected, and the
// heal stops the drift where the clock stands, keeping the time it lost or
// gained. A heal back to real time would be a jump, which ends a leader's
// session deadlines early (a forward jump) and is a fault of another kind.
func TestFaultClockDrift(t *testing.T) {
	env := liveEnv(t)
	t.Parallel()
	ctx := context.Background()
	f := Registry()["clock-drift"].(*clockFault)
	if err := f.Available(ctx, env); err != nil {
		t.Fatal(err)
	}
	what, err := f.Inject(ctx, env, seeded(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inject: %s", what)
	v := f.victim
	c, err := v.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := drift(env); c.Rate < 1-d || c.Rate > 1+d || c.Rate == 1 {
		t.Fatalf("%s's clock runs at rate %v, want a drift within 1 ± %v", v.ID, c.Rate, d)
	}
	time.Sleep(time.Second)
	before, err := v.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	after, err := v.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := time.ParseDuration(before.Offset)
	a, _ := time.ParseDuration(after.Offset)
	if after.Rate != 1 {
		t.Errorf("after the heal %s's clock runs at rate %v, want 1", v.ID, after.Rate)
	}
	if b == 0 || (a-b).Abs() > time.Millisecond {
		t.Errorf("the heal moved %s's clock from offset %v to %v: a jump, want it to stay where the drift left it", v.ID, b, a)
	}
	t.Logf("offset %v before the heal, %v after", b, a)
}
