package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// FencedLock is the lock that guards the fenced resource.
const FencedLock = "jepsen/fenced"

// Write is one write the resource received, in the order it decided them.
type Write struct {
	Seq      int
	At       int64 // harness clock, when the resource decided
	Client   string
	Session  string
	Token    uint64
	Accepted bool
}

// Grant is a grant of FencedLock that a writer reported to the resource,
// with bounds on when it happened on the harness clock: the acquire was
// invoked no earlier than Call and acknowledged no later than Return. A
// child's Call is that of its session's first acquire of unknown outcome
// since it last surely held nothing, if any: that acquire may be the one
// the grant came from.
type Grant struct {
	Client  string
	Session string
	Token   uint64
	Call    int64
	Return  int64
	// Child is set for a child process's grant, which the history's
	// operations do not hold.
	Child bool
}

// HoldReport is a child client's report, when it stops believing it holds
// FencedLock, of the interval of that belief on the harness clock: From
// no earlier than its acquire's return, To no later than the moment its
// library gave the lock up (Lost closed, or Unlock invoked). Both are 0
// when the child could not read the harness clock.
type HoldReport struct {
	Client  string
	Session string
	Token   uint64
	From    int64
	To      int64
}

// Resource is a shared log guarded by FencedLock: holders append to it,
// each write carrying its fencing token. With fencing on, it refuses a
// token lower than the highest it has accepted (client.Fence); with
// fencing off (the negative control) it accepts everything, so a paused
// holder's late write lands after a newer holder's. It serves HTTP on
// 127.0.0.1 for the child clients.
type Resource struct {
	fencing bool
	rec     *history.Recorder
	fence   client.Fence
	ln      net.Listener
	srv     *http.Server

	mu       sync.Mutex
	writes   []Write
	grants   []Grant
	holding  map[string]bool
	children []*Child
}

// Child is a fence client running as a separate process, so that the
// harness can stop it with SIGSTOP while it holds the lock.
type Child struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	rec  *history.Recorder

	mu     sync.Mutex
	pauses [][2]int64 // SIGSTOP intervals on the harness clock; an open one ends at Infinity
}

// NewResource starts the resource's HTTP server on 127.0.0.1.
func NewResource(fencing bool, rec *history.Recorder) (*Resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Resource{fencing: fencing, rec: rec, ln: ln, holding: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, req *http.Request) {
		var wr Write
		if json.NewDecoder(req.Body).Decode(&wr) != nil {
			http.Error(w, "bad write", 400)
			return
		}
		if !r.Write(wr.Client, wr.Session, wr.Token) {
			http.Error(w, "stale token", http.StatusConflict)
		}
	})
	// A child asks for the time before it invokes an acquire: the answer
	// is a reading taken before the invocation, so a lower bound of it.
	mux.HandleFunc("POST /acquiring", func(w http.ResponseWriter, req *http.Request) {
		_ = json.NewEncoder(w).Encode(rec.Now())
	})
	// A child reports a grant after its acquire returned: the report's
	// arrival bounds the acknowledgement from above.
	mux.HandleFunc("POST /grant", func(w http.ResponseWriter, req *http.Request) {
		var g Grant
		if json.NewDecoder(req.Body).Decode(&g) == nil {
			g.Return = rec.Now()
			g.Child = true
			r.Granted(g)
		}
	})
	// A child reports the end of its belief that it holds the lock; the
	// hold goes into the history, marked paused if the harness stopped
	// the child during it.
	mux.HandleFunc("POST /released", func(w http.ResponseWriter, req *http.Request) {
		var h HoldReport
		if json.NewDecoder(req.Body).Decode(&h) == nil {
			r.released(h)
		}
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// released records a child's hold (if its bounds are known) and that it
// no longer holds the lock.
func (r *Resource) released(h HoldReport) {
	r.mu.Lock()
	r.holding[h.Client] = false
	var c *Child
	for _, x := range r.children {
		if x.Name == h.Client {
			c = x
		}
	}
	r.mu.Unlock()
	if h.From <= 0 || h.To <= h.From {
		return
	}
	hold := history.Hold{Client: -1, Lock: FencedLock, Session: h.Session, Token: h.Token, From: h.From, To: h.To}
	if c != nil {
		hold.PausedAt, hold.Paused = c.pausedDuring(h.From, h.To)
	}
	r.rec.AddHold(hold)
}

// pausedDuring returns the start of the first pause that overlaps
// [from, to], and whether there is one.
func (c *Child) pausedDuring(from, to int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pauses {
		if p[0] <= to && p[1] >= from {
			return p[0], true
		}
	}
	return 0, false
}

// URL returns the resource's base URL.
func (r *Resource) URL() string { return "http://" + r.ln.Addr().String() }

// Fencing reports whether the resource checks tokens.
func (r *Resource) Fencing() bool { return r.fencing }

// Write decides one write atomically with the token check, records it,
// and reports whether it was accepted.
func (r *Resource) Write(clientName, session string, token uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := true
	if r.fencing {
		ok = r.fence.Admit(FencedLock, token) == nil
	}
	r.writes = append(r.writes, Write{Seq: len(r.writes), At: r.rec.Now(), Client: clientName,
		Session: session, Token: token, Accepted: ok})
	return ok
}

// Granted records that a writer was granted FencedLock.
func (r *Resource) Granted(g Grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants = append(r.grants, g)
	r.holding[g.Client] = true
}

// Writes returns every write in decision order.
func (r *Resource) Writes() []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}

// Grants returns the grants writers reported.
func (r *Resource) Grants() []Grant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Grant(nil), r.grants...)
}

// Children returns the child clients.
func (r *Resource) Children() []*Child {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Child(nil), r.children...)
}

// Holding reports whether the child last said it holds the lock.
func (r *Resource) Holding(c *Child) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holding[c.Name]
}

// StartChildren starts n child fence clients that run until ctx ends (and
// exit by themselves at its deadline plus a few seconds at the latest).
// On a secured cluster each gets cfg's TLS files and a token of its own.
func (r *Resource) StartChildren(ctx context.Context, cfg Config, n int) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Hour)
	}
	for i := range n {
		name := fmt.Sprintf("child-%d", i)
		token, err := cfg.newToken(ctx, "jepsen fence client "+name, fencedRules)
		if err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(cfg.LogDir, name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(cfg.Binary)
		cmd.Env = append(append(os.Environ(), cfg.Env...), EnvRole+"=fence-client",
			EnvEndpoints+"="+joinComma(cfg.Endpoints), EnvResource+"="+r.URL(), EnvClient+"="+name,
			EnvTTL+"="+cfg.TTL.String(), fmt.Sprintf("%s=%d", EnvDeadline, deadline.UnixMilli()),
			EnvCA+"="+cfg.CAFile, EnvCert+"="+cfg.CertFile, EnvKey+"="+cfg.KeyFile, EnvToken+"="+token)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			_ = logf.Close()
			return fmt.Errorf("traffic: start %s: %w", name, err)
		}
		c := &Child{Name: name, cmd: cmd, done: make(chan struct{}), rec: r.rec}
		go func() { _ = cmd.Wait(); _ = logf.Close(); close(c.done) }() // how it ended shows in cmd.ProcessState
		r.mu.Lock()
		r.children = append(r.children, c)
		r.mu.Unlock()
	}
	return nil
}

// PID returns the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Pause stops the child with SIGSTOP, and records when on the harness
// clock (just before the signal: the pause began no earlier).
func (c *Child) Pause() error {
	c.mu.Lock()
	c.pauses = append(c.pauses, [2]int64{c.rec.Now(), history.Infinity})
	c.mu.Unlock()
	return syscall.Kill(c.cmd.Process.Pid, syscall.SIGSTOP)
}

// Resume continues the child with SIGCONT, and records when the pause
// ended (just after the signal).
func (c *Child) Resume() error {
	err := syscall.Kill(c.cmd.Process.Pid, syscall.SIGCONT)
	c.mu.Lock()
	if n := len(c.pauses); n > 0 && c.pauses[n-1][1] == history.Infinity {
		c.pauses[n-1][1] = c.rec.Now()
	}
	c.mu.Unlock()
	return err
}

// Close waits for the children to exit (up to 10 s past their deadline,
// then kills them), and stops the HTTP server.
func (r *Resource) Close() {
	for _, c := range r.Children() {
		_ = c.Resume()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	_ = r.srv.Close()
}

// fencedWorker is an in-process holder of FencedLock: it takes the lock
// with try acquires, and while the library says it holds it, appends to
// the resource with its fencing token. Its client speaks with token.
func (t *Traffic) fencedWorker(ctx context.Context, token string, rng interface{ IntN(int) int }) {
	w := t.newWorker(token, []string{FencedLock}, nil)
	defer w.endSession()
	name := fmt.Sprintf("worker-%d", w.id)
	for sleep(ctx, time.Duration(20+rng.IntN(200))*time.Millisecond) {
		s := w.session(ctx)
		if s == nil {
			continue
		}
		m := client.NewMutex(s, FencedLock)
		call := t.rec.Now()
		tok, ok := w.acquire(ctx, m, FencedLock)
		if !ok {
			continue
		}
		r := t.fence
		r.Granted(Grant{Client: name, Session: s.ID(), Token: tok, Call: call, Return: t.rec.Now()})
		for range 2 + rng.IntN(5) {
			if !m.Held() || !sleep(ctx, 50*time.Millisecond) {
				break
			}
			t.count("write")
			r.Write(name, s.ID(), tok)
		}
		w.release(ctx, m)
	}
}
