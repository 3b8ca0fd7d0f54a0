package server_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// TestJoin_APermanentRefusalEndsTheAttempt: a node that asks to join with
// a token the cluster refuses gives up and says why (Failed, Err), where
// it used to retry every few seconds forever; lockd serve then exits with
// an error.
func TestJoin_APermanentRefusalEndsTheAttempt(t *testing.T) {
	c, leader := aclCluster(t, 1)
	nc := lease.DefaultConfig()
	nc.ID, nc.DataDir, nc.Join = "n9", filepath.Join(t.TempDir(), "n9"), c.URL(leader)
	wrong := strings.Repeat("x", 32) // no token of this cluster
	s, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0",
		ACL: true, ACLToken: wrong, Logger: servertest.Logger(t, "n9")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	select {
	case <-s.Failed():
	case <-time.After(30 * time.Second):
		t.Fatal("a node whose join was refused 401 still retries after 30 s")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "cannot join the cluster") {
		t.Fatalf("Err() = %v, want the 401 refusal of the join", err)
	}
}
