package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
)

// fakeFault is a fault whose heal fails while failHeal is set.
type fakeFault struct{ failHeal, pending bool }

func (f *fakeFault) Name() string                                    { return "fake" }
func (f *fakeFault) Available(context.Context, *failpoint.Env) error { return nil }
func (f *fakeFault) Hold(*failpoint.Env, *rand.Rand) time.Duration   { return 0 }
func (f *fakeFault) Pending() bool                                   { return f.pending }
func (f *fakeFault) Inject(context.Context, *failpoint.Env, *rand.Rand) (string, error) {
	return "faked", nil
}
func (f *fakeFault) Heal(context.Context, *failpoint.Env) error {
	if f.failHeal {
		return errors.New("heal failed")
	}
	return nil
}

// TestFaultLog_Windows checks that the schedule's faults, wrapped, record
// when they were in force: from before the injection to after a heal that
// succeeded; a failed heal leaves the window open until the next heal or
// the run's heal of everything; a fault's own Pending passes through.
func TestFaultLog_Windows(t *testing.T) {
	rec := history.NewRecorder()
	l := newFaultLog(rec)
	f := &fakeFault{}
	w := l.wrap([]failpoint.Failpoint{f})[0]
	ctx := context.Background()
	before := rec.Now()
	if _, err := w.Inject(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f.failHeal, f.pending = true, true
	if _, err := w.Inject(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Heal(ctx, nil); err == nil {
		t.Fatal("the fake's heal did not fail")
	}
	if p, ok := w.(interface{ Pending() bool }); !ok || !p.Pending() {
		t.Fatal("Pending does not pass through")
	}
	ws := l.Windows()
	if len(ws) != 2 || ws[0].Kind != "fake" || ws[0].From < before || ws[0].To < ws[0].From || ws[1].From < ws[0].To || ws[1].To != history.Infinity {
		t.Fatalf("windows %+v", ws)
	}
	l.endAll()
	if ws := l.Windows(); ws[1].To == history.Infinity || ws[1].To < ws[1].From {
		t.Fatalf("after healing everything: %+v", ws)
	}
}
