// Command lockd-bench measures lockd: the election algorithms side by side
// (no cluster needed), the serving paths of a running cluster, and
// failover on a cluster of lockd processes it starts itself.
//
//	lockd-bench elections [flags]          messages and time to elect: ring, bully, invitation, raft
//	lockd-bench locks|handoff|keepalive|serving|waiters|watchers|kv|kv-scale [--addr ADDRS] [flags]
//	lockd-bench failover [--lockd PATH] [flags]
//
// It is a tool of its own so that the server binary, lockd, carries no
// process supervisor and never runs the Go toolchain. Run
// "lockd-bench COMMAND -h" for a command's flags; each also reads from
// LOCKD_<FLAG>, as lockd's do.
package main

import (
	"fmt"
	"os"

	"github.com/lockd/lockd/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s\n", benchUsage)
		return cli.ExitUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprintf(os.Stderr, "usage: %s\n", benchUsage)
		return cli.ExitOK
	}
	return benchCmd(args)
}

// fail prints err for the command cmd and returns cli.ExitError.
func fail(cmd string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", cmd, err)
	return cli.ExitError
}
