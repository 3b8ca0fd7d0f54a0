package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/test/servertest"
)

// syncBuffer is a bytes.Buffer that a watch may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kvRunner runs lockd kv commands in this process against addr.
type kvRunner struct {
	t    *testing.T
	addr string
}

func (r kvRunner) run(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut syncBuffer
	args = append([]string{args[0], "--addr", r.addr}, args[1:]...) // before a "--"
	code = kvCmd(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// must runs a command that must exit 0 and returns its output.
func (r kvRunner) must(stdin string, args ...string) string {
	r.t.Helper()
	code, out, errOut := r.run(context.Background(), stdin, args...)
	if code != cli.ExitOK {
		r.t.Fatalf("lockd kv %v: exit %d: %s", args, code, errOut)
	}
	return out
}

// exits runs a command that must exit with want.
func (r kvRunner) exits(want int, args ...string) string {
	r.t.Helper()
	code, _, errOut := r.run(context.Background(), "", args...)
	if code != want {
		r.t.Fatalf("lockd kv %v: exit %d, want %d: %s", args, code, want, errOut)
	}
	return errOut
}

// lockd kv against one node: put and get round-trip bytes, a missing key,
// a failed cas and a refused guard exit 3, ls with its forms, del of a key
// and of a prefix, an ephemeral key on a session of another process, and
// watch printing a line per change until interrupted.
func TestKVCmd(t *testing.T) {
	c := servertest.New(t, 1)
	r := kvRunner{t, c.URL(0)}
	bin := "line one\nline two\x00\xff"
	if out := r.must(bin, "put", "cfg/blob", "-"); !strings.HasPrefix(out, "key=cfg/blob index=") || !strings.Contains(out, "version=1") {
		t.Fatalf("put: %q", out)
	}
	if out := r.must("", "get", "cfg/blob"); out != bin {
		t.Fatalf("get printed %q, want the value byte for byte, %q", out, bin)
	}
	var rec api.KVRead
	if err := json.Unmarshal([]byte(r.must("", "get", "--json", "cfg/blob")), &rec); err != nil || string(rec.KV.Value) != bin || rec.Index == 0 {
		t.Fatalf("get --json: %+v %v", rec, err)
	}
	r.exits(exitNotAcquired, "get", "cfg/none")
	r.exits(exitNotAcquired, "put", "--cas", "0", "cfg/blob", "x")
	r.must("", "put", "--cas", fmt.Sprint(rec.KV.ModifyIndex), "cfg/blob", "two")
	r.must("", "put", "--flags", "9", "cfg/a", "--", "-5") // a value that starts with a dash
	if out := r.must("", "get", "cfg/a"); out != "-5" {
		t.Fatalf("get of a dashed value: %q", out)
	}
	if out := r.must("", "put", "--sequential", "q/job-", "x"); !strings.HasPrefix(out, "key=q/job-0000") {
		t.Fatalf("sequential put: %q", out)
	}

	if out := r.must("", "ls", "--keys", "cfg/"); out != "cfg/a\ncfg/blob\n" {
		t.Fatalf("ls --keys: %q", out)
	}
	if out := r.must("", "ls", "--count"); out != "3\n" {
		t.Fatalf("ls --count: %q", out)
	}
	if out := r.must("", "ls", "cfg/"); !strings.Contains(out, "KEY") || !strings.Contains(out, "cfg/a ") || !strings.Contains(out, " 9 ") {
		t.Fatalf("ls: %q", out)
	}
	var l api.KVList
	if err := json.Unmarshal([]byte(r.must("", "ls", "--json", "cfg/")), &l); err != nil || l.Count != 2 || string(l.KVs[1].Value) != "two" {
		t.Fatalf("ls --json: %+v %v", l, err)
	}

	// An ephemeral key belongs to a session another process keeps.
	r.exits(cli.ExitUsage, "put", "--ephemeral", "svc/leader", "x")
	cl, err := client.New(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.NewSession(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	r.must("", "put", "--ephemeral", "--session", s.ID(), "svc/leader", "http://10.0.0.1:8080")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r.exits(exitNotAcquired, "get", "svc/leader")

	// A guard that does not hold: the lock is free.
	r.exits(exitNotAcquired, "put", "--guard", "jobs/x:12", "out/x", "v")

	// watch: a line per change after the index of a read, until
	// interrupted.
	var counted struct{ Index uint64 }
	if err := json.Unmarshal([]byte(r.must("", "ls", "--count", "--json", "cfg/")), &counted); err != nil || counted.Index == 0 {
		t.Fatalf("ls --count --json: %+v %v", counted, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- kvCmd(ctx, []string{"watch", "--prefix", "cfg/", "--index", fmt.Sprint(counted.Index), "--addr", r.addr}, nil, &out, &errOut)
	}()
	r.must("", "put", "cfg/a", "three")
	r.must("", "del", "cfg/a")
	servertest.WaitFor(t, 10*time.Second, "two lines of watch", func() bool { return strings.Count(out.String(), "\n") >= 2 })
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("watch exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], ` put cfg/a version=2 value="three"`) || !strings.HasSuffix(lines[1], " delete cfg/a") {
		t.Fatalf("watch printed %q", lines)
	}

	// txn: a transaction from standard input; its compare fails, then
	// holds.
	cur, err := cl.KV().Get(context.Background(), "cfg/blob", client.Default)
	if err != nil {
		t.Fatal(err)
	}
	txn := func(index uint64) string {
		return fmt.Sprintf(`{"compare":[{"key":"cfg/blob","target":"modify_index","op":"=","number":%d}],
			"success":[{"put":{"key":"cfg/t1","value":"b25l"}},{"put":{"key":"cfg/t2","value":"dHdv"}}],
			"failure":[{"get":{"key":"cfg/blob"}}]}`, index)
	}
	code, txOut, errText := r.run(context.Background(), txn(cur.KV.ModifyIndex+100), "txn")
	var resp api.TxnResponse
	if code != exitNotAcquired || json.Unmarshal([]byte(txOut), &resp) != nil || resp.Succeeded || len(resp.Results) != 1 {
		t.Fatalf("txn whose compare fails: exit %d, %q %s", code, txOut, errText)
	}
	if out := r.must(txn(cur.KV.ModifyIndex), "txn", "-"); json.Unmarshal([]byte(out), &resp) != nil || !resp.Succeeded {
		t.Fatalf("txn whose compare holds: %q", out)
	}
	if out := r.must("", "get", "cfg/t2"); out != "two" {
		t.Fatalf("after the txn, cfg/t2 = %q", out)
	}

	if out := r.must("", "del", "--prefix", "q/"); !strings.HasPrefix(out, "deleted=1 ") {
		t.Fatalf("del --prefix: %q", out)
	}
	if out := r.must("", "del", "cfg/none"); !strings.HasPrefix(out, "deleted=0 ") {
		t.Fatalf("del of a missing key: %q", out)
	}
}

func TestKVCmd_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"kv"},
		{"kv", "nothing"},
		{"kv", "get"},
		{"kv", "get", "a", "b"},
		{"kv", "get", "a//b"},
		{"kv", "get", "--stale", "--consistent", "a"},
		{"kv", "put", "a"},
		{"kv", "put", "--cas", "x", "a", "v"},
		{"kv", "put", "--cas", "1", "--sequential", "a", "v"},
		{"kv", "put", "--guard", "lock", "a", "v"},
		{"kv", "put", "--guard", "lock:0", "a", "v"},
		{"kv", "put", "--session", "s1", "a", "v"}, // --session is for --ephemeral
		{"kv", "del"},
		{"kv", "del", "--prefix", ""},
		{"kv", "del", "--prefix", "p/", "a"},
		{"kv", "del", "--cas", "0", "a"},
		{"kv", "del", "--cas", "3", "--prefix", "p/"},
		{"kv", "ls", "a", "b"},
		{"kv", "ls", "--keys", "--count"},
		{"kv", "watch"},
		{"kv", "watch", "--prefix", "p/", "a"},
		{"kv", "txn", "a", "b"},
		{"kv", "txn", "/no/such/file"},
	} {
		if code := run(args); code != cli.ExitUsage {
			t.Errorf("lockd %v exited %d, want %d", args, code, cli.ExitUsage)
		}
	}
}

func TestEventLine(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tt := range []struct {
		e    api.Event
		want string
	}{
		{api.Event{Index: 4, Type: "put", KV: api.KV{Key: "a", Value: []byte("v\n"), Version: 2}}, `index=4 put a version=2 value="v\n"`},
		{api.Event{Index: 5, Type: "put", KV: api.KV{Key: "a", Value: []byte(long), Version: 3}}, `index=5 put a version=3 value="` + long[:64] + `"...`},
		{api.Event{Index: 6, Type: "delete", KV: api.KV{Key: "a"}}, "index=6 delete a"},
	} {
		if got := eventLine(tt.e); got != tt.want {
			t.Errorf("eventLine = %q, want %q", got, tt.want)
		}
	}
}
