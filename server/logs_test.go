package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// logLine is one record a node logged, its attributes as text.
type logLine struct {
	node  string
	level slog.Level
	msg   string
	attrs map[string]string
}

// logBook records every node's log records, at every level.
type logBook struct {
	mu    sync.Mutex
	lines []logLine
}

func (b *logBook) handler(node string) slog.Handler { return &bookHandler{b: b, node: node} }

// find returns the lines of node ("" for any) at level info or above
// whose message is msg.
func (b *logBook) find(node, msg string) []logLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logLine
	for _, l := range b.lines {
		if (node == "" || l.node == node) && l.msg == msg && l.level >= slog.LevelInfo {
			out = append(out, l)
		}
	}
	return out
}

// infoCount counts the lines at level info or above.
func (b *logBook) infoCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, l := range b.lines {
		if l.level >= slog.LevelInfo {
			n++
		}
	}
	return n
}

func (b *logBook) dump(t *testing.T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.lines {
		if l.level >= slog.LevelInfo {
			t.Logf("%s %v %q %v", l.node, l.level, l.msg, l.attrs)
		}
	}
}

type bookHandler struct {
	b     *logBook
	node  string
	attrs []slog.Attr
}

func (h *bookHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *bookHandler) Handle(_ context.Context, r slog.Record) error {
	l := logLine{node: h.node, level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	h.b.mu.Lock()
	h.b.lines = append(h.b.lines, l)
	h.b.mu.Unlock()
	return nil
}

func (h *bookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &bookHandler{b: h.b, node: h.node, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *bookHandler) WithGroup(string) slog.Handler { return h }

// State changes are logged once each, at info or warn, with structured
// fields: a leader elected (and followed), its master lease gained and
// given up, a session expired, the lock its expiry handed over, a member
// removed and added. Requests are not: 200 acquires add no info line.
func TestLogs_StateChangesOnceNoLinePerRequest(t *testing.T) {
	book := &logBook{}
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		cfg.Logger = slog.New(book.handler(fmt.Sprintf("n%d", i+1)))
	})
	li := c.WaitLeader()
	leader, fi := c.Nodes[li].ID(), c.Follower(li)
	once := func(node, msg string, attrs ...string) logLine {
		t.Helper()
		ls := book.find(node, msg)
		if len(ls) != 1 {
			book.dump(t)
			t.Fatalf("%s logged %q %d times, want once", node, msg, len(ls))
		}
		for _, kv := range attrs {
			k, v, _ := strings.Cut(kv, "=")
			if !strings.Contains(ls[0].attrs[k], v) {
				t.Fatalf("%s %q: %s=%q, want it to hold %q", node, msg, k, ls[0].attrs[k], v)
			}
		}
		return ls[0]
	}
	once(leader, "became leader; establishing master lease", "term=")
	once(leader, "master lease gained; serving as leader", "term=", "lease=")
	for _, s := range c.Nodes {
		if s.ID() != leader {
			once(s.ID(), "following a new leader", "leader="+leader)
		}
	}

	// 200 acquires and releases, through the leader and a follower.
	before := book.infoCount()
	fronts := []*nodeAPI{newAPI(t, c, li), newAPI(t, c, fi)}
	sessions := []string{fronts[0].session(time.Minute, 0), fronts[1].session(time.Minute, 0)}
	for i := range 200 {
		a, s := fronts[i%2], sessions[i%2]
		name := fmt.Sprintf("req/%d", i)
		if _, st, e := a.acquire(name, s, 0); st != 200 {
			t.Fatalf("acquire %s: %d %s", name, st, e.Message)
		}
		a.must("POST", "/v1/locks/"+name+"/release", api.SessionRequest{Session: s}, nil)
	}
	if grew := book.infoCount() - before; grew > 5 {
		book.dump(t)
		t.Fatalf("200 acquires and releases added %d lines at info or above", grew)
	}

	// An expiry hands a lock to its waiter once the lock-delay ends.
	l := fronts[0]
	doomed := l.session(time.Second, 500*time.Millisecond)
	if _, st, _ := l.acquire("handed", doomed, 0); st != 200 {
		t.Fatal("acquire handed")
	}
	got := make(chan int, 1)
	go func() {
		_, st, _ := l.acquire("handed", sessions[0], 30*time.Second)
		got <- st
	}()
	select {
	case st := <-got:
		if st != 200 {
			t.Fatalf("the waiter's acquire: %d", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not handed the lock")
	}
	servertest.WaitFor(t, 5*time.Second, "the hand-over's log line", func() bool {
		return len(book.find(leader, "locks handed over after their holder expired")) > 0
	})
	once(leader, "sessions expired", "sessions="+doomed, "count=1")
	once(leader, "locks handed over after their holder expired", "locks=handed", "count=1")

	// A member removed, then added again.
	gone := c.Nodes[c.Follower(li)]
	l.must("DELETE", "/v1/cluster/members/"+gone.ID(), nil, nil)
	once(leader, "removed member", "id="+gone.ID())
	l.must("POST", "/v1/cluster/members", api.Member{ID: gone.ID(), Peer: gone.PeerAddr(), HTTP: gone.HTTPURL()}, nil)
	once(leader, "added voter", "id="+gone.ID())
	if n := len(book.find("", "member added")) + len(book.find("", "member removed")); n != 0 {
		t.Fatalf("the API logged the membership requests at info as well (%d lines)", n)
	}

	// A graceful stop gives the lease up and ends the term, once.
	if err := c.Stop(li); err != nil {
		t.Fatal(err)
	}
	once(leader, "master lease given up to hand leadership over", "term=")
	once(leader, "leader term ended", "term=")
	for _, l := range book.find("", "") {
		t.Errorf("a line with no message: %+v", l)
	}
}
