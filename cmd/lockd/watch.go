package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

const watchUsage = `lockd watch lock|election|session NAME [--addr ADDRS] [--json]

Print the lock, election or session (NAME is then its id) now, then one line each
time it changes, read through blocking queries (?index=&wait=), until interrupted
(SIGINT, SIGTERM, SIGHUP: exit 0). It creates no session and takes nothing.
A watched session that ends prints "session=ID ended" and exits 0.
--json prints one JSON object a line, as the API answers it.`

// watchWait is how long each blocking query of a watch waits on the
// server; a change answers it at once.
const watchWait = time.Minute

// watchCmd runs "lockd watch KIND NAME".
func watchCmd(args []string) int {
	fs := cli.NewFlagSet("lockd watch", watchUsage)
	var f clientFlags
	f.register(fs, true)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return cli.ExitOK
		}
		return cli.UsageErr(fs, "want lock, election or session, then a NAME")
	}
	kind := args[0]
	pos, command, err := cli.ParseArgs(fs, args[1:])
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) != 1 || len(command) > 0 {
		return cli.UsageErr(fs, "want one NAME")
	}
	switch kind {
	case "lock", "election":
		if err := api.ValidateName(pos[0]); err != nil {
			return cli.UsageErr(fs, "%v", err)
		}
	case "session":
	default:
		return cli.UsageErr(fs, "unknown kind %q (want lock, election or session)", kind)
	}
	c, err := f.client()
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return watch(ctx, os.Stdout, "lockd watch "+kind, watcherFor(c, kind, pos[0]), f.jsonOut)
}

// watcher reads its object once, as a blocking query from index (wait 0:
// at once), and returns the value to print as JSON, its index, and its
// line without the index (a read whose line is the last one printed shows
// nothing new and prints nothing).
type watcher func(ctx context.Context, index uint64, wait time.Duration) (v any, next uint64, line string, err error)

func watcherFor(c *client.Client, kind, name string) watcher {
	switch kind {
	case "lock":
		return func(ctx context.Context, index uint64, wait time.Duration) (any, uint64, string, error) {
			l, err := c.WaitLock(ctx, name, index, wait)
			return l, l.ModifyIndex, lockLine(l), err
		}
	case "election":
		return func(ctx context.Context, index uint64, wait time.Duration) (any, uint64, string, error) {
			e, err := c.WaitElection(ctx, name, index, wait)
			return e, e.ModifyIndex, electionLine(e), err
		}
	}
	return func(ctx context.Context, index uint64, wait time.Duration) (any, uint64, string, error) {
		s, err := c.WaitSession(ctx, name, index, wait)
		return s, s.Index, sessionLine(s), err
	}
}

// watch prints what w reads, then every change, until ctx ends (exit 0),
// a watched session ends (exit 0), or a read fails for good (exit 1).
// Reads the client may repeat (no leader, a lost connection) it repeats
// until they succeed.
func watch(ctx context.Context, out io.Writer, cmd string, w watcher, jsonOut bool) int {
	var index uint64
	last := ""
	for first := true; ; first = false {
		wait := watchWait
		if first {
			wait = 0
		}
		v, next, line, err := w(ctx, index, wait)
		switch {
		case ctx.Err() != nil:
			return cli.ExitOK
		case errors.Is(err, client.ErrSessionExpired) && !first:
			fmt.Fprintf(out, "%s ended\n", strings.Fields(last)[0])
			return cli.ExitOK
		case err != nil:
			return fail(os.Stderr, cmd, err)
		}
		index = next
		if line == last {
			continue
		}
		last = line
		if jsonOut {
			b, jerr := json.Marshal(v)
			if jerr != nil {
				return fail(os.Stderr, cmd, jerr)
			}
			line = string(b)
		} else {
			line = fmt.Sprintf("%s index=%d", line, next)
		}
		if _, err := fmt.Fprintln(out, line); err != nil {
			return fail(os.Stderr, cmd, fmt.Errorf("write output: %w", err))
		}
	}
}

func lockLine(l api.Lock) string {
	var hs []string
	for _, h := range l.Holders {
		hs = append(hs, fmt.Sprintf("%s:%d", short(h.Session), h.Token))
	}
	var ws []string
	for _, w := range l.Waiters {
		ws = append(ws, short(w.Session)+":"+w.Mode)
	}
	delay := ""
	if l.DelayUntil != nil {
		delay = " delay_until=" + l.DelayUntil.Format(time.RFC3339)
	}
	if l.Limit > 0 {
		var ds []string
		for _, d := range l.DelayedSlots {
			ds = append(ds, short(d.Session)+":"+d.Until.Format(time.RFC3339))
		}
		delay = fmt.Sprintf(" limit=%d delayed_slots=%s", l.Limit, dash(strings.Join(ds, ",")))
	}
	return fmt.Sprintf("lock=%s mode=%s holders=%s waiters=%s%s", l.Name, dash(l.Mode), dash(strings.Join(hs, ",")),
		dash(strings.Join(ws, ",")), delay)
}

func electionLine(e api.Election) string {
	if e.Session == "" {
		return fmt.Sprintf("election=%s leader=none", e.Name)
	}
	return fmt.Sprintf("election=%s leader=%s value=%q token=%d", e.Name, e.Session, e.Value, e.Token)
}

// sessionLine shows what a session holds; its time left is not in it, so
// that a keepalive is not a change.
func sessionLine(s api.Session) string {
	return fmt.Sprintf("session=%s name=%q locks=%s elections=%s", s.ID, s.Name, dash(strings.Join(s.Locks, ",")),
		dash(strings.Join(s.Elections, ",")))
}
