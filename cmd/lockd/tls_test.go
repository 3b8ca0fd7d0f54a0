package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/internal/cli"
)

func TestTLSInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if got := run([]string{"tls", "init", dir, "--nodes", "2", "--hosts", "10.1.2.3,db.example"}); got != cli.ExitOK {
		t.Fatalf("tls init exit %d", got)
	}
	for _, f := range []string{"ca.pem", "ca-key.pem", "n1.pem", "n1-key.pem", "n2.pem", "n2-key.pem", "client.pem", "client-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "-key.pem") && st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", f, st.Mode().Perm())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n3.pem")); err == nil {
		t.Error("--nodes 2 made n3")
	}
	if got := run([]string{"tls", "init", dir}); got != cli.ExitError {
		t.Errorf("tls init over existing files exit %d, want %d", got, cli.ExitError)
	}
	for _, args := range [][]string{{"tls"}, {"tls", "make", dir}, {"tls", "init"}, {"tls", "init", dir, "--nodes", "0"},
		{"tls", "init", dir, "--hosts", " , "}, {"tls", "init", "a", "b"}} {
		if got := run(args); got != cli.ExitUsage {
			t.Errorf("%q exit %d, want %d", args, got, cli.ExitUsage)
		}
	}
}

// tlsFiles makes a bundle and returns a function naming its files.
func tlsFiles(t *testing.T) func(string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := certs.Init(dir, []string{"n1"}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	return func(name string) string { return filepath.Join(dir, name) }
}

func TestServeFlags_TLS(t *testing.T) {
	f := tlsFiles(t)
	api := []string{"--tls-cert", f("n1.pem"), "--tls-key", f("n1-key.pem")}
	peer := []string{"--peer-ca", f("ca.pem"), "--peer-cert", f("n1.pem"), "--peer-key", f("n1-key.pem")}
	config := func(args ...string) (string, error) {
		t.Helper()
		fl, err := parseServe(t, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		logger, _ := fl.logger()
		cfg, err := fl.config(logger)
		return cfg.Node.HTTPAddr, err
	}

	addr, err := config()
	if err != nil || addr != "http://127.0.0.1:7400" {
		t.Fatalf("plain: %q, %v", addr, err)
	}
	fl, _ := parseServe(t, append(append([]string{"--client-ca", f("ca.pem")}, api...), peer...), nil)
	logger, _ := fl.logger()
	cfg, err := fl.config(logger)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.HTTPAddr != "https://127.0.0.1:7400" || cfg.HTTPTLS == nil || cfg.HTTPTLS.ClientCAs == nil ||
		cfg.PeerTLS == nil || cfg.APIClientTLS == nil || len(cfg.APIClientTLS.Certificates) != 2 {
		t.Fatalf("TLS config: addr %s, http %v, peer %v, api client %v", cfg.Node.HTTPAddr, cfg.HTTPTLS != nil, cfg.PeerTLS != nil, cfg.APIClientTLS != nil)
	}
	if addr, err := config(append(api, "--advertise-http", "node1:7400")...); err != nil || addr != "https://node1:7400" {
		t.Fatalf("bare --advertise-http with TLS: %q, %v", addr, err)
	}
	if addr, err := config(peer...); err != nil || addr != "http://127.0.0.1:7400" {
		t.Fatalf("peer TLS alone: %q, %v", addr, err)
	}
	fl, _ = parseServe(t, append(api, "--election", "bully", "--initial-cluster", "n1=127.0.0.1:7401", "--cluster-http", "n1=127.0.0.1:7400"), nil)
	if cfg, err := fl.config(logger); err != nil || cfg.MembersHTTP["n1"] != "https://127.0.0.1:7400" {
		t.Fatalf("bare --cluster-http with TLS: %v, %v", cfg.MembersHTTP, err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--client-ca", f("ca.pem")}, "--client-ca needs --tls-cert"},
		{[]string{"--tls-cert", f("n1.pem")}, "--tls-key is needed"},
		{[]string{"--tls-key", f("n1-key.pem")}, "--tls-cert is needed"},
		{[]string{"--peer-ca", f("ca.pem")}, "needs all of --peer-ca, --peer-cert and --peer-key"},
		{append(api, "--advertise-http", "http://127.0.0.1:7400"), "advertise an https:// URL"},
		{[]string{"--tls-cert", f("n1.pem"), "--tls-key", f("client-key.pem")}, "--tls-cert"},
		{append(api, "--client-ca", f("missing.pem")), "--client-ca"},
	} {
		if _, err := config(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

func TestClientFlags_TLS(t *testing.T) {
	f := tlsFiles(t)
	cf := clientFlags{Endpoint: cli.Endpoint{Addr: cli.DefaultAddr}}
	if addrs, cfg, err := cf.Endpoints(); err != nil || cfg != nil || addrs[0] != cli.DefaultAddr {
		t.Fatalf("plain: %v %v %v", addrs, cfg, err)
	}
	cf.CACert = f("ca.pem")
	if addrs, cfg, err := cf.Endpoints(); err != nil || cfg == nil || cfg.RootCAs == nil || addrs[0] != cli.DefaultTLSAddr {
		t.Fatalf("--cacert: %v %v %v", addrs, cfg, err)
	}
	cf.Addr = "10.0.0.1:7400,http://10.0.0.2:7400"
	cf.Cert, cf.Key = f("client.pem"), f("client-key.pem")
	addrs, cfg, err := cf.Endpoints()
	if err != nil || len(cfg.Certificates) != 1 || len(addrs) != 2 {
		t.Fatalf("--cert/--key: %v %v %v", addrs, cfg, err)
	}
	cf.Key = ""
	if _, _, err := cf.Endpoints(); err == nil {
		t.Fatal("--cert without --key accepted")
	}
	for k, v := range map[string]string{"LOCKD_CACERT": f("ca.pem"), "LOCKD_CERT": f("client.pem"), "LOCKD_KEY": f("client-key.pem")} {
		t.Setenv(k, v)
	}
	fs := cli.NewFlagSet("lockd status", "")
	var fromEnv clientFlags
	fromEnv.register(fs, true)
	if _, _, err := cli.ParseArgs(fs, nil); err != nil {
		t.Fatal(err)
	}
	if fromEnv.CACert != f("ca.pem") || fromEnv.Cert != f("client.pem") || fromEnv.Key != f("client-key.pem") {
		t.Fatalf("from the environment: %+v", fromEnv)
	}
}
