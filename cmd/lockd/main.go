// Command lockd is the lockd server and its command-line tools.
//
//	lockd serve [flags]    run a node (with no flags: a single-node cluster on 127.0.0.1:7400)
//	lockd version          print the version
//
// Run "lockd serve -h" for the flags; each also reads from LOCKD_<FLAG>
// (upper case, dashes as underscores), e.g. LOCKD_HTTP.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "version", "--version", "-version":
		fmt.Println("lockd", version)
		return exitOK
	case "help", "-h", "--help":
		usage()
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "lockd: unknown command %q\n\n", args[0])
	usage()
	return exitUsage
}

func usage() {
	fmt.Fprint(os.Stderr, `lockd: a replicated lock and leader-lease service

Usage:
  lockd serve [flags]   run a node; with no flags, a single-node cluster
                        (HTTP 127.0.0.1:7400, peers 127.0.0.1:7401, data ./lockd-data)
  lockd version         print the version

Run "lockd serve -h" for the serve flags. Every flag can also be set with an
environment variable LOCKD_<FLAG>, e.g. LOCKD_HTTP=127.0.0.1:8400.
`)
}
