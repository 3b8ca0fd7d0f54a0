// Package cli holds the habits every lockd command shares: exit codes,
// flag sets whose usage names the command, flags before and after the
// positional arguments, LOCKD_<FLAG> environment variables, and the
// addresses and TLS files of the cluster a client command talks to.
package cli

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/lockd/lockd/internal/certs"
)

// Exit codes every command uses; commands add their own above these.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// NewFlagSet returns a FlagSet whose usage names the command.
func NewFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// UsageErr prints a usage error for the command of fs and returns
// ExitUsage.
func UsageErr(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.SetOutput(os.Stderr)
	fs.Usage()
	return ExitUsage
}

// FlagErr turns a flag parsing error into an exit code: -h is not an error.
func FlagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// ParseArgs parses flags that may come before and after the positional
// arguments, up to a "--" after which everything is the command to run.
// It applies LOCKD_* environment variables to flags not given.
func ParseArgs(fs *flag.FlagSet, args []string) (positional, command []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
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
	return positional, command, ApplyEnv(fs)
}

// EnvName returns the environment variable that sets flag name.
func EnvName(name string) string {
	return "LOCKD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ApplyEnv sets every flag not given on the command line from its LOCKD_*
// variable, if that is set. A bad value is an error naming the variable.
func ApplyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, serr)
			}
		}
	})
	return err
}

// DefaultAddr is the address client commands use without --addr;
// DefaultTLSAddr replaces it with --cacert, --cert or --key.
const (
	DefaultAddr    = "http://127.0.0.1:7400"
	DefaultTLSAddr = "https://127.0.0.1:7400"
)

// Endpoint are the flags that say where the cluster is and how to reach
// it over HTTPS.
type Endpoint struct {
	Addr              string
	CACert, Cert, Key string
}

// Register adds --addr, --cacert, --cert and --key to fs.
func (f *Endpoint) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", DefaultAddr, "comma-separated HTTP addresses of cluster members (host:port means https:// with --cacert or --cert)")
	fs.StringVar(&f.CACert, "cacert", "", "HTTPS: verify the cluster's certificates against the CA(s) in this PEM file (default: the system's roots)")
	fs.StringVar(&f.Cert, "cert", "", "HTTPS: present this PEM client certificate (with --key), for a cluster started with --client-ca")
	fs.StringVar(&f.Key, "key", "", "PEM private key of --cert")
}

// Endpoints returns the addresses of --addr and the TLS configuration of
// --cacert, --cert and --key (nil without them). With TLS, the default
// address is https://, as are addresses given as host:port (the client
// library makes them so).
func (f *Endpoint) Endpoints() ([]string, *tls.Config, error) {
	tlsCfg, err := certs.ClientTLS(f.CACert, f.Cert, f.Key)
	if err != nil {
		return nil, nil, err
	}
	addrs := strings.Split(f.Addr, ",")
	if tlsCfg != nil && f.Addr == DefaultAddr {
		addrs = []string{DefaultTLSAddr}
	}
	return addrs, tlsCfg, nil
}
