package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/certs"
)

// Exit codes of the client commands, beyond exitOK, exitError, exitUsage.
const (
	// exitNotAcquired: the lock was held (or the wait ran out); for
	// "leader", nobody leads.
	exitNotAcquired = 3
	// exitLost: the lock or leadership was lost while CMD ran; CMD was
	// stopped.
	exitLost = 4
)

// defaultAddr is the address client commands use without --addr;
// defaultTLSAddr replaces it with --cacert, --cert or --key.
const (
	defaultAddr    = "http://127.0.0.1:7400"
	defaultTLSAddr = "https://127.0.0.1:7400"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	addr              string
	caCert, cert, key string
	aclToken          string
	jsonOut           bool
}

func (f *clientFlags) register(fs *flag.FlagSet, withJSON bool) {
	fs.StringVar(&f.addr, "addr", defaultAddr, "comma-separated HTTP addresses of cluster members (host:port means https:// with --cacert or --cert)")
	fs.StringVar(&f.caCert, "cacert", "", "HTTPS: verify the cluster's certificates against the CA(s) in this PEM file (default: the system's roots)")
	fs.StringVar(&f.cert, "cert", "", "HTTPS: present this PEM client certificate (with --key), for a cluster started with --client-ca")
	fs.StringVar(&f.key, "key", "", "PEM private key of --cert")
	fs.StringVar(&f.aclToken, "acl-token", "", "the secret of the ACL token to send, when the cluster has ACLs on (prefer env LOCKD_ACL_TOKEN: a flag shows in ps)")
	if withJSON {
		fs.BoolVar(&f.jsonOut, "json", false, "print JSON for scripts instead of a table")
	}
}

// tokenGiven records whether a client command was given an ACL token
// (LOCKD_ACL_TOKEN or --acl-token), for fail's explanation of a 401.
var tokenGiven bool

func (f *clientFlags) client() (*client.Client, error) {
	addrs, tlsCfg, err := f.endpoints()
	if err != nil {
		return nil, err
	}
	tokenGiven = f.aclToken != ""
	return client.NewWithConfig(client.Config{Endpoints: addrs, TLS: tlsCfg, BearerToken: f.aclToken})
}

// endpoints returns the addresses of --addr and the TLS configuration of
// --cacert, --cert and --key (nil without them). With TLS, the default
// address is https://, as are addresses given as host:port (the client
// library makes them so).
func (f *clientFlags) endpoints() ([]string, *tls.Config, error) {
	tlsCfg, err := certs.ClientTLS(f.caCert, f.cert, f.key)
	if err != nil {
		return nil, nil, err
	}
	addrs := strings.Split(f.addr, ",")
	if tlsCfg != nil && f.addr == defaultAddr {
		addrs = []string{defaultTLSAddr}
	}
	return addrs, tlsCfg, nil
}

// parseArgs parses flags that may come before and after the positional
// arguments, up to a "--" after which everything is the command to run.
// It applies LOCKD_* environment variables to flags not given.
func parseArgs(fs *flag.FlagSet, args []string) (positional, command []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:] //nolint:gosec // G602: i indexes args, so i+1 <= len(args)
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return positional, command, applyEnv(fs)
}

// newFlagSet returns a FlagSet whose usage names the command.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// usageErr prints a usage error for a client command and returns exitUsage.
func usageErr(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.SetOutput(os.Stderr)
	fs.Usage()
	return exitUsage
}

func fail(w io.Writer, cmd string, err error) int {
	fmt.Fprintf(w, "%s: %v\n", cmd, explain(err, tokenGiven))
	return exitError
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

// flagErr turns a flag parsing error into an exit code: -h is not an error.
func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
