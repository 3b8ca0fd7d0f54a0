package runner

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/lockd/lockd/jepsen/failpoint"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/validate"
)

// faultLog records when each fault of the schedule was in force, on the
// harness clock, for the checkers: from just before its injection began to
// just after a heal of it returned without error (a heal that failed
// leaves it in force until one succeeds, or until the run heals
// everything).
type faultLog struct {
	rec     *history.Recorder
	mu      sync.Mutex
	windows []validate.FaultWindow
	open    map[string]int // fault name -> index of its open window
}

func newFaultLog(rec *history.Recorder) *faultLog {
	return &faultLog{rec: rec, open: map[string]int{}}
}

// wrap returns faults that record their windows in l.
func (l *faultLog) wrap(faults []failpoint.Failpoint) []failpoint.Failpoint {
	out := make([]failpoint.Failpoint, len(faults))
	for i, f := range faults {
		out[i] = loggedFault{Failpoint: f, log: l}
	}
	return out
}

func (l *faultLog) begin(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[kind]; ok {
		return
	}
	l.open[kind] = len(l.windows)
	l.windows = append(l.windows, validate.FaultWindow{Kind: kind, From: l.rec.Now(), To: history.Infinity})
}

func (l *faultLog) end(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, ok := l.open[kind]; ok {
		l.windows[i].To = l.rec.Now()
		delete(l.open, kind)
	}
}

// endAll closes every window still open: the run healed everything.
func (l *faultLog) endAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for kind, i := range l.open {
		l.windows[i].To = l.rec.Now()
		delete(l.open, kind)
	}
}

// Windows returns the windows recorded, in the order the faults began.
func (l *faultLog) Windows() []validate.FaultWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]validate.FaultWindow(nil), l.windows...)
}

// loggedFault is a fault whose injections and heals its log records.
type loggedFault struct {
	failpoint.Failpoint
	log *faultLog
}

func (f loggedFault) Inject(ctx context.Context, env *failpoint.Env, rng *rand.Rand) (string, error) {
	f.log.begin(f.Name())
	return f.Failpoint.Inject(ctx, env, rng)
}

func (f loggedFault) Heal(ctx context.Context, env *failpoint.Env) error {
	err := f.Failpoint.Heal(ctx, env)
	if err == nil {
		f.log.end(f.Name())
	}
	return err
}

// Unwrap returns the fault itself, for what the schedule asks of it
// beyond Failpoint (failpoint.AimOf).
func (f loggedFault) Unwrap() failpoint.Failpoint { return f.Failpoint }

// Pending passes on the fault's own report of a heal that failed (the
// schedule tries such a heal once more at its end).
func (f loggedFault) Pending() bool {
	p, ok := f.Failpoint.(interface{ Pending() bool })
	return ok && p.Pending()
}
