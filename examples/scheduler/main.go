// Command scheduler is lockd's work-scheduling example: a coordinator,
// elected through a lockd election, hands out tasks, and a result store
// rejects the results of coordinators that have been replaced.
//
//	scheduler store  [--listen 127.0.0.1:7500] [--tasks 100]
//	scheduler worker --store URL --id NAME [--lockd ADDRS] [--work 100ms]
//
// The store holds tasks 1..N and their results. Every worker campaigns in
// the election scheduler/coordinator; the one that leads is the
// coordinator: it asks the store which tasks are still pending and works
// through them, posting each result with its election token. The store
// admits tokens through a client.Fence, so once a newer coordinator has
// shown its token, an older one's results are refused however late they
// arrive. Kill the coordinator and another takes over where it stopped;
// pause it past its session's TTL and its late result is refused. See
// examples/scheduler/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/client"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// defaultElection is the election the workers campaign in. The store fences
// on the same name: a token is meaningful only together with its lock.
const defaultElection = "scheduler/coordinator"

const usage = `scheduler: lockd's work-scheduling example

  scheduler store  [--listen ADDR] [--tasks N]    the result store; prints its URL on stdout
  scheduler worker --store URL --id NAME [flags]  a worker; the elected one coordinates

Run "scheduler store -h" or "scheduler worker -h" for the flags.
`

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs one subcommand and returns the process's exit code.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "store":
		return runStore(args[1:])
	case "worker":
		return runWorker(args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "scheduler: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// parse parses a subcommand's flags and refuses positional arguments. If
// the command should not go on (-h, or bad arguments), ok is false and code
// is its exit code.
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return exitUsage, false
	}
	return exitOK, true
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

func runStore(args []string) int {
	fs := flag.NewFlagSet("scheduler store", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:7500", "HTTP listen address (port 0: any free port)")
	tasks := fs.Int("tasks", 100, "number of tasks, numbered 1..N")
	election := fs.String("election", defaultElection, "election whose tokens the store fences on")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *tasks < 1 {
		fmt.Fprintln(os.Stderr, "scheduler store: --tasks must be at least 1")
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scheduler store: %v\n", err)
		return exitError
	}
	// The URL is the only thing on stdout, so that scripts can read it.
	fmt.Printf("http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{
		Handler:           newStore(*tasks, *election, newLogger(os.Stderr).With("component", "store")),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "scheduler store: %v\n", err)
		return exitError
	}
	return exitOK
}

func runWorker(args []string) int {
	fs := flag.NewFlagSet("scheduler worker", flag.ContinueOnError)
	var cfg workerConfig
	lockd := fs.String("lockd", "http://127.0.0.1:7400", "comma-separated HTTP addresses of lockd nodes")
	fs.StringVar(&cfg.Store, "store", "", "URL of the result store (required)")
	fs.StringVar(&cfg.ID, "id", "", "this worker's name, its value in the election (required)")
	fs.StringVar(&cfg.Election, "election", defaultElection, "election to campaign in")
	fs.DurationVar(&cfg.TTL, "ttl", 2*time.Second, "session TTL: how long a dead coordinator keeps leading")
	fs.DurationVar(&cfg.LockDelay, "lock-delay", 500*time.Millisecond, "how long leadership stays ungrantable after the session expires")
	fs.DurationVar(&cfg.Work, "work", 100*time.Millisecond, "time one task takes")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if cfg.Store == "" || cfg.ID == "" {
		fmt.Fprintln(os.Stderr, "scheduler worker: --store and --id are required")
		return exitUsage
	}
	lc, err := client.New(strings.Split(*lockd, ",")...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scheduler worker: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	newWorker(cfg, lc, newLogger(os.Stderr).With("worker", cfg.ID)).Run(ctx)
	return exitOK
}
