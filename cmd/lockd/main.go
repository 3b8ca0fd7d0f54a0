// Command lockd is the lockd server and its command-line tools.
//
//	lockd serve [flags]                  run a node (no flags: a single-node cluster on 127.0.0.1:7400)
//	lockd lock [flags] NAME [-- CMD...]  run CMD holding a lock; without CMD, hold it until interrupted
//	lockd elect [flags] NAME [-- CMD...] run CMD while leader; without CMD, campaign and print changes
//	lockd elect --listen NAME            print changes of leader without campaigning
//	lockd watch lock|election|session NAME  print the object, then a line per change
//	lockd kv get|put|del|ls|watch ...    the namespace of keys: read, write, list, watch
//	lockd status | locks | sessions | elections  the cluster, locks, sessions, elections (--json for scripts)
//	lockd leader NAME                    who leads an election
//	lockd members [add ID PEER --http URL | remove ID]  list, add or remove members
//	lockd leader-transfer [--to ID]      hand leadership to another voter
//	lockd snapshot save|inspect|restore FILE  back up, check a backup, seed a new cluster
//	lockd tls init DIR [flags]           a development CA and certificates for a cluster
//	lockd version                        print the version
//
// Exit codes: 0 success (or CMD's own code), 1 error, 2 usage, 3 lock not
// acquired / nobody leads / key not found, cas or guard refused (kv), 4 lock or leadership lost while CMD ran (CMD was
// sent SIGTERM, then SIGKILL after --grace); 128+N when CMD died of signal N.
//
// Run "lockd serve -h" for the flags; each also reads from LOCKD_<FLAG>
// (upper case, dashes as underscores), e.g. LOCKD_HTTP.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lockd/lockd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return cli.ExitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "lock":
		return lockCmd(args[1:])
	case "elect":
		return electCmd(args[1:])
	case "watch":
		return watchCmd(args[1:])
	case "kv":
		return kvCmd(context.Background(), args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "status", "locks", "sessions", "elections", "leader":
		return infoCmd(args[0], args[1:])
	case "bench":
		fmt.Fprintln(os.Stderr, "lockd: the benchmarks are a command of their own: lockd-bench "+strings.Join(args[1:], " ")+
			"\n(make build puts it in bin/; or: go run ./cmd/lockd-bench)")
		return cli.ExitUsage
	case "tls":
		return tlsCmd(args[1:])
	case "acl":
		return aclCmd(args[1:])
	case "members":
		return membersCmd(args[1:])
	case "leader-transfer":
		return transferCmd(args[1:])
	case "snapshot":
		return snapshotCmd(args[1:], os.Stdout, os.Stderr)
	case "version", "--version", "-version":
		printVersion(os.Stdout)
		return cli.ExitOK
	case "help", "-h", "--help":
		usage()
		return cli.ExitOK
	}
	fmt.Fprintf(os.Stderr, "lockd: unknown command %q\n\n", args[0])
	usage()
	return cli.ExitUsage
}

func usage() {
	fmt.Fprint(os.Stderr, `lockd: a replicated lock and leader-lease service

Usage:
  lockd serve [flags]                   run a node; with no flags, a single-node cluster
                                        (HTTP 127.0.0.1:7400, peers 127.0.0.1:7401, data ./lockd-data)
  lockd lock [flags] NAME [-- CMD...]   run CMD holding the lock NAME (LOCKD_TOKEN in its environment);
                                        without CMD, print the fencing token and hold the lock until
                                        interrupted; --wait forever (the default), a duration, or 0
  lockd elect [flags] NAME [-- CMD...]  run CMD while leader of NAME; without CMD, print leader changes
  lockd elect --listen NAME             print the leader and each change, without campaigning
  lockd watch lock|election|session NAME
                                        print the object, then one line per change (blocking
                                        queries), until interrupted; --json for scripts
  lockd kv get KEY | put KEY VALUE|- | del KEY | ls [PREFIX] | watch KEY
                                        the namespace of keys: print a value (--json: the record),
                                        write one (--cas N, --guard LOCK:TOKEN, --ephemeral
                                        --session ID), delete a key or --prefix, list keys
                                        (--keys, --count), print a line per change (--prefix)
  lockd status | locks | sessions | elections
                                        the cluster, its locks, sessions, elections (--json for scripts)
  lockd leader NAME                     who leads the election NAME
  lockd members [add ID PEER --http URL | remove ID]
                                        list the members (role, last contact), add or remove one
  lockd leader-transfer [--to ID]       hand leadership to another voter
  lockd acl token create|list|revoke|self
                                        manage ACL tokens (docs/security.md)
  lockd snapshot save|inspect|restore FILE
                                        back up the cluster's state, check a backup, seed a
                                        new cluster from one (docs/operations.md, "Backup and restore")
  lockd tls init DIR [--nodes N] [--hosts H,...]
                                        a development CA, a certificate per node and a
                                        client certificate, for --tls-cert, --peer-cert, ...
  lockd version                         print the version, the commit and the Go version

Client commands find the cluster with --addr or LOCKD_ADDR (default
http://127.0.0.1:7400; several addresses separated by commas), and speak
HTTPS with --cacert, --cert and --key (LOCKD_CACERT, LOCKD_CERT,
LOCKD_KEY). Run
"lockd COMMAND -h" for a command's flags. Every flag can also be set with an
environment variable LOCKD_<FLAG>, e.g. LOCKD_HTTP=127.0.0.1:8400.

Exit codes: 0 ok (or CMD's own), 1 error, 2 usage, 3 not acquired / no
leader / kv: no such key, --cas or --guard refused, 4 lock or leadership lost while CMD ran, 128+N CMD killed by signal N.

The benchmarks are the command lockd-bench.
`)
}
