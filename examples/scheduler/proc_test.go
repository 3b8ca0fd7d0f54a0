package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// mainEnv, set in a process's environment, makes the test binary run the
// scheduler command instead of the tests. The store and the workers run
// that way as real processes, so that a worker can be killed with SIGKILL
// or paused with SIGSTOP like any program.
const mainEnv = "SCHEDULER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// proc is the scheduler command running in a child process. Its stdout and
// stderr are kept, line by line, for the test to wait on.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // receives (capacity 1) when lines grows
}

// startProc starts "scheduler args..." as a child process; it is killed
// when the test ends.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{}), grew: make(chan struct{}, 1)}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), mainEnv+"=1")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	err = p.cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer func() { _ = r.Close() }()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.add(sc.Text())
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("---- %s (pid %d) ----\n%s", name, p.cmd.Process.Pid, p.tail(40))
		}
	})
	return p
}

func (p *proc) add(line string) {
	p.mu.Lock()
	p.lines = append(p.lines, line)
	p.mu.Unlock()
	select {
	case p.grew <- struct{}{}:
	default:
	}
}

// lineCount returns how many lines the process has written so far.
func (p *proc) lineCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// hasLine reports whether a line from line number from on matches re.
func (p *proc) hasLine(re *regexp.Regexp, from int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines[min(from, len(p.lines)):] {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// waitLine waits for a line, from line number from on, that matches re,
// and returns its number and submatches.
func (p *proc) waitLine(re *regexp.Regexp, from int, within time.Duration) (int, []string) {
	p.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for i := from; ; {
		p.mu.Lock()
		for ; i < len(p.lines); i++ {
			if m := re.FindStringSubmatch(p.lines[i]); m != nil {
				p.mu.Unlock()
				return i, m
			}
		}
		p.mu.Unlock()
		select {
		case <-p.grew:
		case <-deadline.C:
			p.t.Fatalf("%s wrote no line matching %q within %v", p.name, re, within)
		}
	}
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines[max(0, len(p.lines)-n):], "\n")
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%v to %s: %v", sig, p.name, err)
	}
}

// kill sends SIGKILL (after SIGCONT, in case it is stopped) and waits until
// the process is gone.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.done
}

// waitExit waits for the process to exit by itself with status 0.
func (p *proc) waitExit(within time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		p.t.Fatalf("%s did not exit within %v", p.name, within)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Fatalf("%s exited with %d (%v), want 0", p.name, code, p.cmd.ProcessState)
	}
}
