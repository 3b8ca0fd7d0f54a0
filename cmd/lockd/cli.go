package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

// Exit codes of the client commands, beyond cli.ExitOK, cli.ExitError, cli.ExitUsage.
const (
	// exitNotAcquired: the lock was held (or the wait ran out); for
	// "leader", nobody leads.
	exitNotAcquired = 3
	// exitLost: the lock or leadership was lost while CMD ran; CMD was
	// stopped.
	exitLost = 4
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	cli.Endpoint
	aclToken string
	jsonOut  bool
}

func (f *clientFlags) register(fs *flag.FlagSet, withJSON bool) {
	f.Endpoint.Register(fs)
	fs.StringVar(&f.aclToken, "acl-token", "", "the secret of the ACL token to send, when the cluster has ACLs on (prefer env LOCKD_ACL_TOKEN: a flag shows in ps)")
	if withJSON {
		fs.BoolVar(&f.jsonOut, "json", false, "print JSON for scripts instead of a table")
	}
}

// tokenGiven records whether a client command was given an ACL token
// (LOCKD_ACL_TOKEN or --acl-token), for fail's explanation of a 401.
// Atomic: the tests run commands side by side in one process.
var tokenGiven atomic.Bool

func (f *clientFlags) client() (*client.Client, error) {
	addrs, tlsCfg, err := f.Endpoints()
	if err != nil {
		return nil, err
	}
	tokenGiven.Store(f.aclToken != "")
	return client.NewWithConfig(client.Config{Endpoints: addrs, TLS: tlsCfg, BearerToken: f.aclToken})
}

func fail(w io.Writer, cmd string, err error) int {
	fmt.Fprintf(w, "%s: %v\n", cmd, explain(err, tokenGiven.Load()))
	return cli.ExitError
}

// explain rewrites a 401 unauthorized in the CLI's terms: the server's
// sentence names the HTTP header, which a CLI user does not write; the CLI
// sends the token of LOCKD_ACL_TOKEN or --acl-token.
func explain(err error, given bool) error {
	if api.CodeOf(err) != api.CodeUnauthorized {
		return err
	}
	if !given {
		return errors.New("the cluster has ACLs on and no token was given: " +
			"set LOCKD_ACL_TOKEN to your token's secret (or pass --acl-token, which shows in ps)")
	}
	var e *api.Error
	msg := err.Error()
	if errors.As(err, &e) {
		msg = e.Message
	}
	return fmt.Errorf("the cluster refused the token of LOCKD_ACL_TOKEN (or --acl-token): %s", msg)
}
