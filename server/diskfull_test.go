package server_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// smallDisk mounts a tmpfs of size bytes in a new directory and returns
// it; it is unmounted when the test ends. It needs root.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system for the data dir needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs: %v: %s", size, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes zeros to a file in dir until the disk is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	// Whatever a partial page left: fill it byte by byte.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return path
}

// TestDiskFull_NodeSaysSoAndRecovers fills the disk of a single node's
// data dir while it serves: writes fail, and the node says why (/readyz
// 503 storage_full, GET /v1/cluster's storage_problem, lockd_storage_full
// 1) instead of only no_leader; once space is freed it serves again by
// itself, and after a restart every acknowledged session is there.
func TestDiskFull_NodeSaysSoAndRecovers(t *testing.T) {
	disk := smallDisk(t, "24m")
	reg := prometheus.NewRegistry()
	c := servertest.NewWith(t, 1, func(_ int, cfg *server.Config) {
		cfg.Node.DataDir = filepath.Join(disk, "n1")
		cfg.Node.LogStore = "boltdb" // the WAL preallocates 64 MiB segments
		cfg.Metrics = reg
	})
	c.WaitLeader()
	a := newAPI(t, c, 0)
	var acked []string
	acked = append(acked, a.session(time.Hour, 0))
	filler := fill(t, disk)

	name := strings.Repeat("n", 200)
	failed := false
	for i := 0; i < 20000 && !failed; i++ {
		var s api.Session
		st, _ := a.do("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(time.Hour), Name: name}, &s)
		switch st {
		case 201:
			acked = append(acked, s.ID)
		default:
			failed = true
		}
	}
	if !failed {
		t.Fatal("20000 sessions were written to a full disk")
	}
	servertest.WaitFor(t, 20*time.Second, "/readyz to say the disk is full", func() bool {
		st, e := a.do("GET", "/readyz", nil, nil)
		return st == 503 && e.Code == api.CodeStorageFull
	})
	var cl api.Cluster
	if st, _ := a.do("GET", "/v1/cluster", nil, &cl); st != 200 || cl.StorageProblem == nil || cl.StorageProblem.Reason != api.CodeStorageFull {
		t.Errorf("GET /v1/cluster on a full disk: %d, storage_problem %+v; want reason storage_full", st, cl.StorageProblem)
	}
	if got := metric(t, reg, "lockd_storage_full", nil); got != 1 {
		t.Errorf("lockd_storage_full = %v on a full disk, want 1", got)
	}
	if got := metric(t, reg, "lockd_storage_write_errors_total", nil); got < 1 {
		t.Errorf("lockd_storage_write_errors_total = %v on a full disk", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, 30*time.Second, "the node to serve again once space is freed", func() bool {
		var s api.Session
		st, _ := a.do("POST", "/v1/sessions", api.CreateSessionRequest{TTL: api.Duration(time.Hour)}, &s)
		if st == 201 {
			acked = append(acked, s.ID)
		}
		return st == 201
	})
	if st, _ := a.do("GET", "/readyz", nil, nil); st != 200 {
		t.Errorf("/readyz = %d after space was freed and a write succeeded", st)
	}
	if got := metric(t, reg, "lockd_storage_full", nil); got != 0 {
		t.Errorf("lockd_storage_full = %v after a write succeeded", got)
	}
	snaps, _ := filepath.Glob(filepath.Join(disk, "n1", "snapshots", "*.tmp"))
	if len(snaps) != 0 {
		t.Errorf("failed snapshots left %v", snaps)
	}

	c.Crash(0)
	c.Configure(0, func(cfg *server.Config) { cfg.Metrics = nil })
	c.Start(0)
	c.WaitLeader()
	a = newAPI(t, c, 0)
	for _, id := range acked {
		if st, e := a.do("GET", "/v1/sessions/"+id, nil, nil); st != 200 {
			t.Errorf("acknowledged session %s after the restart: %d %s", id, st, e.Code)
		}
	}
	t.Logf("%d sessions acknowledged, the disk filled, freed, the node restarted: all there", len(acked))
}

// TestDiskFull_StartSaysTheDiskIsFull: a node whose data dir is on a full
// disk refuses to start, saying so (it used to ask whether another lockd
// used the data dir), with either log store.
func TestDiskFull_StartSaysTheDiskIsFull(t *testing.T) {
	disk := smallDisk(t, "8m")
	fill(t, disk)
	for _, store := range []string{"wal", "boltdb"} {
		nc := lease.DefaultConfig()
		nc.ID, nc.DataDir, nc.LogStore, nc.NoBootWait = "n1", filepath.Join(disk, store), store, true
		s, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0",
			Logger: servertest.Logger(t, "n1")})
		if err == nil {
			_ = s.Close()
			t.Fatalf("--log-store %s: a node started on a full disk", store)
		}
		if msg := err.Error(); !strings.Contains(msg, "the disk holding the data dir is full") || strings.Contains(msg, "another lockd") {
			t.Errorf("--log-store %s on a full disk: %q, want it to say the disk is full", store, msg)
		} else {
			t.Logf("--log-store %s: %s", store, msg)
		}
	}
}
