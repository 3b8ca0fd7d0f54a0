package failpoint

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
)

// TestMain lets the test binary serve as a child fence client, which the
// resource starts by re-executing it.
func TestMain(m *testing.M) {
	if traffic.IsFenceClient() {
		os.Exit(traffic.RunFenceClient())
	}
	os.Exit(m.Run())
}

// TestFaultPauseClient measures pause-client: every thread of the child
// that holds the fenced lock is stopped, it writes nothing while stopped,
// another child takes the lock once the session expires, and after the
// heal the child runs again; its hold is recorded as paused from the
// pause's start.
func TestFaultPauseClient(t *testing.T) {
	env := liveEnv(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := traffic.NewResource(true, env.Rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env.TTL = time.Second
	cfg := traffic.Config{Endpoints: env.Cluster.Endpoints(), TTL: env.TTL, Binary: self, LogDir: t.TempDir()}
	if err := r.StartChildren(ctx, cfg, 2); err != nil {
		t.Fatal(err)
	}
	defer func() { // the children would run until the context's deadline
		for _, c := range r.Children() {
			syscall.Kill(c.PID(), syscall.SIGKILL)
		}
	}()
	env.Resource = r
	p := Registry()["pause-client"].(*pauseClient)
	what, err := p.Inject(ctx, env, seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inject: %s", what)
	v := p.victim
	defer func() { _ = v.Resume() }()
	pausedAt := env.Rec.Now()
	pid := v.PID()
	waitFor(t, 2*time.Second, "every thread of "+v.Name+" stopped", func() bool {
		st := threadStates(pid)
		for _, s := range st {
			if s != "T" {
				return false
			}
		}
		return len(st) > 0
	})
	time.Sleep(3 * env.TTL)
	healAt := env.Rec.Now()
	for _, w := range r.Writes() {
		if w.Client == v.Name && w.At > pausedAt+int64(200*time.Millisecond) {
			t.Errorf("paused %s wrote at %v (paused at %v)", v.Name, time.Duration(w.At), time.Duration(pausedAt))
		}
	}
	other := false
	for _, g := range r.Grants() {
		other = other || g.Client != v.Name && g.Return > pausedAt
	}
	if !other {
		t.Errorf("no other client took the lock while %s was stopped past its TTL", v.Name)
	}
	if err := p.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, v.Name+"'s threads running again", func() bool {
		for _, s := range threadStates(pid) {
			if s == "T" {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, v.Name+" to report its paused hold", func() bool {
		for _, h := range env.Rec.Holds() {
			if h.Paused && h.PausedAt >= pausedAt-int64(time.Second) && h.PausedAt <= healAt {
				return true
			}
		}
		return false
	})
}
