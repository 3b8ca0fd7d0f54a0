package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/internal/cli"
)

const tlsUsage = `lockd tls init DIR [--nodes N] [--hosts HOST,...]

Generates a development certificate authority and certificates for a
cluster in DIR (created if missing), with Go's crypto packages:

  ca.pem, ca-key.pem         the CA (ECDSA P-256, 10 years)
  n1.pem, n1-key.pem, ...    one per node: a server and client certificate
                             whose Common Name is the node id, valid for
                             every --hosts entry (IP addresses and names)
  client.pem, client-key.pem a client certificate for the CLI and programs
  client.p12                 the same with the CA, as one PKCS#12 file for a
                             browser (the status page of a cluster that
                             requires client certificates), encrypted with
  client.p12.password        a random password, written here (mode 0600)

Keys are written with mode 0600. It refuses to overwrite: if any of these
files exists, nothing is written. Use them as

  lockd serve --id n1 ... --tls-cert DIR/n1.pem --tls-key DIR/n1-key.pem --client-ca DIR/ca.pem \
              --peer-ca DIR/ca.pem --peer-cert DIR/n1.pem --peer-key DIR/n1-key.pem
  lockd status --addr https://127.0.0.1:7400 --cacert DIR/ca.pem --cert DIR/client.pem --key DIR/client-key.pem

and import DIR/client.p12 into a browser (with the password in
DIR/client.p12.password) and DIR/ca.pem as a trusted authority, then open
https://127.0.0.1:7400/ui/.

A CA made here is for development and tests: its key sits beside the
certificates it signed.`

// tlsCmd runs "lockd tls init".
func tlsCmd(args []string) int {
	fs := cli.NewFlagSet("lockd tls init", tlsUsage)
	nodes := fs.Int("nodes", 3, "how many node certificates: n1 ... nN (1..99)")
	hosts := fs.String("hosts", "127.0.0.1,localhost", "comma-separated IP addresses and DNS names every node certificate is valid for")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", tlsUsage)
		fs.PrintDefaults()
	}
	if len(args) == 0 || args[0] != "init" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return cli.ExitOK
		}
		return cli.UsageErr(fs, "want: lockd tls init DIR")
	}
	pos, command, err := cli.ParseArgs(fs, args[1:])
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) != 1 || len(command) > 0 {
		return cli.UsageErr(fs, "want one directory")
	}
	if *nodes < 1 || *nodes > 99 {
		return cli.UsageErr(fs, "--nodes %d: want 1..99", *nodes)
	}
	var hs []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return cli.UsageErr(fs, "--hosts: name at least one host")
	}
	ids := make([]string, *nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	written, err := certs.Init(pos[0], ids, hs)
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	bundle, err := certs.WriteClientBundle(pos[0])
	written = append(written, bundle...)
	if err != nil {
		for _, p := range written {
			fmt.Println(p)
		}
		return fail(os.Stderr, fs.Name(), err)
	}
	for _, p := range written {
		fmt.Println(p)
	}
	return cli.ExitOK
}
