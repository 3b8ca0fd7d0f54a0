package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

func electCmd(args []string) int {
	fs := cli.NewFlagSet("lockd elect", "lockd elect [flags] NAME [-- CMD [ARGS...]]\n"+
		"       lockd elect --listen NAME   (observe: print the leader and each change, without campaigning)")
	var f holdFlags
	f.registerHold(fs)
	var value string
	var listen, jsonOut bool
	fs.StringVar(&value, "value", "", "the value to lead with (e.g. this process's address)")
	fs.BoolVar(&listen, "listen", false, "do not campaign: print the leader, then each change, until interrupted (as lockd watch election NAME); no session is made")
	fs.BoolVar(&jsonOut, "json", false, "with --listen: print JSON, one object a line")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) != 1 {
		return cli.UsageErr(fs, "want one election NAME")
	}
	name := pos[0]
	if err := api.ValidateName(name); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if jsonOut && !listen {
		return cli.UsageErr(fs, "--json is for --listen")
	}
	if listen {
		if len(command) > 0 || value != "" {
			return cli.UsageErr(fs, "--listen takes no command and no --value: it does not campaign")
		}
		c, err := f.client()
		if err != nil {
			return fail(os.Stderr, fs.Name(), err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		return watch(ctx, os.Stdout, fs.Name(), watcherFor(c, "election", name), jsonOut)
	}
	h, code := f.open("lockd elect", command)
	if h == nil {
		return code
	}
	defer h.close()
	e := client.NewElection(h.s, name)
	if len(command) == 0 {
		return h.watchElection(e, value)
	}
	if code := h.acquire(func(ctx context.Context) error { return e.Campaign(ctx, value) }, "leadership of "+name); code >= 0 {
		return code
	}
	env := []string{"LOCKD_ELECTION=" + name, "LOCKD_VALUE=" + value, fmt.Sprintf("LOCKD_TOKEN=%d", e.Token())}
	code = h.run(command, env, e.Lost(), "leadership of "+name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.Resign(ctx) // if this fails, closing the session (deferred) ends the leadership
	return code
}

// watchElection campaigns and prints every change of leader until a signal
// arrives or leadership is lost, then resigns.
func (h *holder) watchElection(e *client.Election, value string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	campaign := make(chan error, 1)
	go func() { campaign <- e.Campaign(ctx, value) }()
	changes := e.Observe(ctx)
	var lost <-chan struct{}
	for {
		select {
		case l, ok := <-changes:
			if !ok {
				return cli.ExitOK
			}
			if l.Session == "" {
				fmt.Println("leader: none")
			} else {
				fmt.Printf("leader: session=%s value=%q token=%d self=%v\n", l.Session, l.Value, l.Token, l.Session == h.s.ID())
			}
		case err := <-campaign:
			if err != nil {
				return fail(os.Stderr, h.cmd, err)
			}
			lost = e.Lost()
		case <-lost:
			fmt.Fprintf(os.Stderr, "%s: leadership lost (%v)\n", h.cmd, h.s.Err())
			return exitLost
		case sig := <-h.sigs:
			cancel()
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = e.Resign(rctx) // if this fails, closing the session (deferred) ends the leadership
			rcancel()
			fmt.Fprintf(os.Stderr, "%s: %v: resigned\n", h.cmd, sig)
			return cli.ExitOK
		}
	}
}
