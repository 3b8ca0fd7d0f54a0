package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

// holdFlags are the flags of "lockd lock" and "lockd elect".
type holdFlags struct {
	clientFlags
	ttl, lockDelay, grace time.Duration
	sessionName           string
}

func (f *holdFlags) registerHold(fs *flag.FlagSet) {
	f.clientFlags.register(fs, false)
	fs.DurationVar(&f.ttl, "ttl", api.DefaultTTL, "session TTL")
	fs.DurationVar(&f.lockDelay, "lock-delay", api.DefaultLockDelay, "how long the lock stays ungrantable if this session expires")
	fs.DurationVar(&f.grace, "grace", 5*time.Second, "after the lock is lost, how long CMD has between SIGTERM and SIGKILL")
	fs.StringVar(&f.sessionName, "session-name", "", "the session's name, shown by lockd sessions, lockd locks and the status page (default HOST:PID:COMMAND, COMMAND the base name of CMD, or lockd without one)")
}

// defaultSessionName names a session after this host, this process and the
// command it runs (its base name: arguments may hold secrets, and every
// token may read session names), or "lockd" without one.
func defaultSessionName(command []string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	what := "lockd"
	if len(command) > 0 {
		what = filepath.Base(command[0])
	}
	return truncateUTF8(fmt.Sprintf("%s:%d:%s", host, os.Getpid(), what), api.MaxSessionNameLen)
}

// truncateUTF8 cuts s to at most n bytes, never inside a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// waitFlag is --wait of lockd lock: a duration, 0 to try once, or
// "forever" (also spelt -1) to wait until the lock is granted or lockd is
// interrupted.
type waitFlag struct {
	d       time.Duration
	forever bool
}

func (w *waitFlag) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

func (w *waitFlag) Set(s string) error {
	if s == "forever" || s == "-1" {
		*w = waitFlag{forever: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, 0 to try once, or forever (or -1)")
	}
	if d < 0 {
		return fmt.Errorf("a negative wait: want a duration, 0 to try once, or forever (or -1)")
	}
	*w = waitFlag{d: d}
	return nil
}

func lockCmd(args []string) int {
	fs := cli.NewFlagSet("lockd lock", "lockd lock [flags] NAME [-- CMD [ARGS...]]\n\n"+
		"With CMD, run it holding the lock, and release the lock when it exits.\n"+
		"Without CMD, print the lock's name and fencing token once it is held, and hold it\n"+
		"until lockd is interrupted (SIGINT, SIGTERM, SIGHUP), then release it.\n"+
		"With -n N, hold one of the N slots of a semaphore: up to N holders at once.")
	var f holdFlags
	f.registerHold(fs)
	wait := waitFlag{forever: true}
	var shared bool
	var limit int
	fs.Var(&wait, "wait", "how long to wait for the lock: a `duration` such as 30s, 0 to try once (exit 3 if held), or forever, also spelt -1")
	fs.BoolVar(&shared, "shared", false, "take the lock in shared mode")
	fs.IntVar(&limit, "n", 0, fmt.Sprintf("hold one of the `N` slots of a semaphore (1 to %d): up to N holders at once, each with its own token; every holder and waiter of NAME must give the same N", api.MaxLimit))
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) != 1 {
		return cli.UsageErr(fs, "want one lock NAME (then, optionally, -- and the command to run)")
	}
	name := pos[0]
	if err := api.ValidateName(name); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	switch {
	case limit < 0 || limit > api.MaxLimit:
		return cli.UsageErr(fs, "-n %d: want 1 to %d slots (or no -n for an exclusive or shared lock)", limit, api.MaxLimit)
	case limit > 0 && shared:
		return cli.UsageErr(fs, "-n and --shared do not go together: each holder of a semaphore holds one slot exclusively")
	}
	h, code := f.open("lockd lock", command)
	if h == nil {
		return code
	}
	defer h.close()
	var opts []client.MutexOption
	if shared {
		opts = append(opts, client.Shared())
	}
	if limit > 0 {
		opts = append(opts, client.Limit(limit))
	}
	m := client.NewMutex(h.s, name, opts...)
	if code := h.acquire(func(ctx context.Context) error {
		switch {
		case wait.forever:
			return m.Lock(ctx)
		case wait.d == 0:
			return m.TryLock(ctx)
		}
		ctx, cancel := context.WithTimeout(ctx, wait.d)
		defer cancel()
		return m.Lock(ctx)
	}, "lock "+name); code >= 0 {
		return code
	}
	if len(command) == 0 {
		line := fmt.Sprintf("lock=%s token=%d session=%s", name, m.Token(), h.s.ID())
		if limit > 0 {
			line += fmt.Sprintf(" limit=%d", limit)
		}
		code = h.hold(m.Lost(), "lock "+name, line)
	} else {
		env := []string{"LOCKD_LOCK=" + name, fmt.Sprintf("LOCKD_TOKEN=%d", m.Token())}
		if limit > 0 {
			env = append(env, fmt.Sprintf("LOCKD_LIMIT=%d", limit))
		}
		code = h.run(command, env, m.Lost(), "lock "+name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.Unlock(ctx) // if this fails, closing the session (deferred) releases the lock
	return code
}

// hold prints line on standard output, then waits until a signal arrives
// (exit 0: the caller releases) or what is held is lost (exitLost).
func (h *holder) hold(lost <-chan struct{}, what, line string) int {
	fmt.Println(line)
	fmt.Fprintf(os.Stderr, "%s: holding %s until interrupted (Ctrl-C)\n", h.cmd, what)
	select {
	case sig := <-h.sigs:
		fmt.Fprintf(os.Stderr, "%s: %v: releasing %s\n", h.cmd, sig, what)
		return cli.ExitOK
	case <-lost:
		fmt.Fprintf(os.Stderr, "%s: %s lost (%v)\n", h.cmd, what, h.s.Err())
		return exitLost
	}
}

// holder is a session plus the signal handling of a command run under it.
type holder struct {
	cmd   string
	s     *client.Session
	sigs  chan os.Signal
	grace time.Duration
}

func (f *holdFlags) open(cmd string, command []string) (*holder, int) {
	name := f.sessionName
	if name == "" {
		name = defaultSessionName(command)
	}
	c, err := f.client()
	if err != nil {
		return nil, fail(os.Stderr, cmd, err)
	}
	h := &holder{cmd: cmd, sigs: make(chan os.Signal, 4), grace: f.grace}
	signal.Notify(h.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.s, err = client.NewSession(ctx, c, client.WithTTL(f.ttl), client.WithLockDelay(f.lockDelay), client.WithName(name))
	if err != nil {
		signal.Stop(h.sigs)
		return nil, fail(os.Stderr, cmd, fmt.Errorf("create session: %w", err))
	}
	return h, 0
}

func (h *holder) close() {
	signal.Stop(h.sigs)
	if err := h.s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: could not end session %s (%v); what it holds is freed when its TTL of %v runs out\n",
			h.cmd, h.s.ID(), err, h.s.TTL())
	}
}

// acquire runs take until it succeeds (returns -1), or a signal or failure
// ends it (returns the exit code).
func (h *holder) acquire(take func(context.Context) error, what string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- take(ctx) }()
	select {
	case sig := <-h.sigs:
		cancel()
		<-done //nolint:errcheck // take's error once cancelled is only the cancellation
		fmt.Fprintf(os.Stderr, "%s: interrupted by %v while waiting for %s\n", h.cmd, sig, what)
		return 128 + int(sig.(syscall.Signal))
	case err := <-done:
		switch {
		case err == nil:
			return -1
		case errors.Is(err, client.ErrLockHeld), errors.Is(err, client.ErrLockDelay),
			errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(os.Stderr, "%s: %s not acquired: %v\n", h.cmd, what, err)
			return exitNotAcquired
		default:
			return fail(os.Stderr, h.cmd, err)
		}
	}
}

// run starts command with the session's variables and env, forwards
// signals to it, and stops it if lost closes: SIGTERM, then SIGKILL after
// the grace period. It returns the command's exit code, or exitLost.
func (h *holder) run(command, env []string, lost <-chan struct{}, what string) int {
	c := exec.Command(command[0], command[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), append(env, "LOCKD_SESSION="+h.s.ID())...)
	if err := c.Start(); err != nil {
		return fail(os.Stderr, h.cmd, err)
	}
	exited := make(chan struct{})
	go func() { _ = c.Wait(); close(exited) }() // c.ProcessState tells how it ended
	for {
		select {
		case <-exited:
			return exitCode(c.ProcessState)
		case sig := <-h.sigs:
			c.Process.Signal(sig)
		case <-lost:
			fmt.Fprintf(os.Stderr, "%s: %s lost (%v); stopping the command\n", h.cmd, what, h.s.Err())
			stopChild(c, exited, h.grace)
			return exitLost
		}
	}
}

func stopChild(c *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	c.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		c.Process.Kill()
		<-exited
	}
}

// exitCode turns a child's end into lockd's exit code: its own code, or
// 128 + the signal that killed it, as shells do.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
