package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/lockd/lockd/internal/cli"
	"github.com/lockd/lockd/server"
)

func parseServe(t *testing.T, args []string, env map[string]string) (*serveFlags, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &f, cli.ApplyEnv(fs)
}

// mustServeConfig parses args and env as parseServe does and returns the
// node's configuration; it fails the test on any error.
func mustServeConfig(t *testing.T, args []string, env map[string]string) server.Config {
	t.Helper()
	f, err := parseServe(t, args, env)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := f.logger()
	cfg, err := f.config(logger)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestServeFlags_EnvironmentFillsUnsetFlags(t *testing.T) {
	f, err := parseServe(t, []string{"--id", "n7"}, map[string]string{
		"LOCKD_ID": "ignored", "LOCKD_HTTP": "127.0.0.1:9000", "LOCKD_HEARTBEAT_TIMEOUT": "2s",
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.id != "n7" || f.httpAddr != "127.0.0.1:9000" || f.heartbeat.String() != "2s" {
		t.Fatalf("got id=%s http=%s hb=%v; the command line wins, the environment fills the rest", f.id, f.httpAddr, f.heartbeat)
	}
	if _, err := parseServe(t, nil, map[string]string{"LOCKD_HEARTBEAT_TIMEOUT": "soon"}); err == nil ||
		!strings.Contains(err.Error(), "LOCKD_HEARTBEAT_TIMEOUT") {
		t.Fatalf("bad env value: %v, want an error naming the variable", err)
	}
}

func TestServeFlags_ConfigErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--election", "paxos"}, "--election"},
		{[]string{"--election", "bully"}, "needs --initial-cluster naming every member"},
		{[]string{"--election", "bully", "--cluster-http", "n1=127.0.0.1:7400"}, "needs --initial-cluster"},
		{[]string{"--cluster-http", "n1"}, "--cluster-http"},
		{[]string{"--http", "nohost"}, "--http"},
		{[]string{"--initial-cluster", "n1"}, "--initial-cluster"},
		{[]string{"--initial-cluster", "n2=127.0.0.1:1"}, "does not include"},
		{[]string{"--initial-cluster", "n1=127.0.0.1:1", "--join", "http://x"}, "exclusive"},
		{[]string{"--heartbeat-timeout", "1s", "--election-timeout", "100ms"}, "ElectionTimeout"},
		{[]string{"--non-voter"}, "NonVoter needs Join"},
		{[]string{"--voters", "4"}, "must be 0 (off) or odd"},
		{[]string{"--voters", "3", "--dead-voter-after", "100ms"}, "DeadVoterAfter"},
		{[]string{"--election", "ring", "--initial-cluster", "n1=127.0.0.1:1", "--voters", "3"}, "--voters are for --election raft"},
		{[]string{"--election", "ring", "--initial-cluster", "n1=127.0.0.1:1", "--raft-parallel-append"}, "--raft-parallel-append needs --election raft"},
		{[]string{"--election", "ring", "--initial-cluster", "n1=127.0.0.1:1", "--raft-notify-commit"}, "--raft-notify-commit needs --election raft"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--snapshot-threshold", "0"}, "--snapshot-threshold"},
		{[]string{"--snapshot-interval", "1ms"}, "--snapshot-interval"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f, err := parseServe(t, tt.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			logger, err := f.logger()
			if err == nil {
				_, err = f.config(logger)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The snapshot flags reach the node's configuration.
func TestServeFlags_Snapshots(t *testing.T) {
	cfg := mustServeConfig(t, []string{"--snapshot-threshold", "500", "--snapshot-interval", "2s"}, nil)
	if cfg.Node.SnapshotThreshold != 500 || cfg.Node.SnapshotInterval.String() != "2s" {
		t.Fatalf("threshold %d, interval %v", cfg.Node.SnapshotThreshold, cfg.Node.SnapshotInterval)
	}
}

// --raft-parallel-append reaches the node's configuration, on by default;
// =false turns it off, and the classic modes, which keep no Raft log,
// start without it unless it is asked for.
func TestServeFlags_ParallelAppend(t *testing.T) {
	if cfg := mustServeConfig(t, nil, nil); !cfg.Node.ParallelAppend {
		t.Fatal("parallel append off by default")
	}
	if cfg := mustServeConfig(t, []string{"--raft-parallel-append=false"}, nil); cfg.Node.ParallelAppend {
		t.Fatal("--raft-parallel-append=false did not turn it off")
	}
	if cfg := mustServeConfig(t, nil, map[string]string{"LOCKD_RAFT_PARALLEL_APPEND": "false"}); cfg.Node.ParallelAppend {
		t.Fatal("LOCKD_RAFT_PARALLEL_APPEND=false did not turn it off")
	}
	mustServeConfig(t, []string{"--election", "ring", "--initial-cluster", "n1=127.0.0.1:1"}, nil)
}

// --raft-notify-commit reaches the node's configuration, on by default;
// =false (or its environment variable) turns it off.
func TestServeFlags_NotifyCommit(t *testing.T) {
	if cfg := mustServeConfig(t, nil, nil); !cfg.Node.NotifyCommit {
		t.Fatal("commit notification off by default")
	}
	if cfg := mustServeConfig(t, []string{"--raft-notify-commit=false"}, nil); cfg.Node.NotifyCommit {
		t.Fatal("--raft-notify-commit=false did not turn it off")
	}
	if cfg := mustServeConfig(t, nil, map[string]string{"LOCKD_RAFT_NOTIFY_COMMIT": "false"}); cfg.Node.NotifyCommit {
		t.Fatal("LOCKD_RAFT_NOTIFY_COMMIT=false did not turn it off")
	}
}

func TestRun_ExitCodes(t *testing.T) {
	if got := run([]string{"frobnicate"}); got != cli.ExitUsage {
		t.Errorf("unknown command exit = %d, want %d", got, cli.ExitUsage)
	}
	if got := run(nil); got != cli.ExitUsage {
		t.Errorf("no command exit = %d, want %d", got, cli.ExitUsage)
	}
	if got := run([]string{"serve", "--election", "ring", "--data", t.TempDir()}); got != cli.ExitUsage { // no members named
		t.Errorf("bad serve flag exit = %d, want %d", got, cli.ExitUsage)
	}
	if got := run([]string{"version"}); got != cli.ExitOK {
		t.Errorf("version exit = %d", got)
	}
	if got := run([]string{"bench", "elections"}); got != cli.ExitUsage { // moved to lockd-bench
		t.Errorf("bench exit = %d, want %d", got, cli.ExitUsage)
	}
}

// In the classic modes --cluster-http is optional: the members tell each
// other their HTTP addresses over the peer port.
func TestServeFlags_ClassicWithoutClusterHTTP(t *testing.T) {
	f, err := parseServe(t, []string{"--election", "bully", "--initial-cluster", "n1=127.0.0.1:7401,n2=127.0.0.1:7411"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := f.logger()
	cfg, err := f.config(logger)
	if err != nil {
		t.Fatalf("bully without --cluster-http: %v", err)
	}
	if cfg.Election != "bully" || cfg.MembersHTTP != nil || cfg.Node.HTTPAddr != "http://127.0.0.1:7400" {
		t.Fatalf("election %q, members' HTTP %v, advertised %q", cfg.Election, cfg.MembersHTTP, cfg.Node.HTTPAddr)
	}
}

// etcd's API is off unless --etcd-listen (or LOCKD_ETCD_LISTEN) names an
// address, and only in Raft mode.
func TestServeFlags_EtcdListen(t *testing.T) {
	if cfg := mustServeConfig(t, nil, nil); cfg.EtcdListen != "" || cfg.EtcdListener != nil {
		t.Fatalf("etcd's API on by default: %q", cfg.EtcdListen)
	}
	if cfg := mustServeConfig(t, []string{"--etcd-listen", "127.0.0.1:2379"}, nil); cfg.EtcdListen != "127.0.0.1:2379" {
		t.Fatalf("--etcd-listen gave %q", cfg.EtcdListen)
	}
	if cfg := mustServeConfig(t, nil, map[string]string{"LOCKD_ETCD_LISTEN": "127.0.0.1:2380"}); cfg.EtcdListen != "127.0.0.1:2380" {
		t.Fatalf("LOCKD_ETCD_LISTEN gave %q", cfg.EtcdListen)
	}
	f, err := parseServe(t, []string{"--etcd-listen", "127.0.0.1:2379", "--election", "ring", "--initial-cluster", "n1=127.0.0.1:7401"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := f.logger()
	if _, err := f.config(logger); err == nil || !strings.Contains(err.Error(), "--etcd-listen") {
		t.Fatalf("--etcd-listen in a classic mode: %v", err)
	}
}
