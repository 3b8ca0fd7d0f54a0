package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// TestTLS_HTTPSAndPeerMTLS runs a cluster with HTTPS on the API (no client
// certificates asked for) and mutual TLS between nodes: plain HTTP is not
// served, a client that knows the CA is, a request to a follower is
// forwarded to the leader and answered, and every answer names the leader
// by its https:// address, so a client that follows it keeps TLS.
func TestTLS_HTTPSAndPeerMTLS(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Init(dir, []string{"n1", "n2", "n3"}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		cert, key := certs.NodeFiles(fmt.Sprintf("n%d", i+1))
		var err error
		if cfg.HTTPTLS, err = certs.ServerTLS(f(cert), f(key), ""); err != nil {
			t.Fatal(err)
		}
		if cfg.PeerTLS, err = certs.PeerTLS(f(certs.CAFile), f(cert), f(key)); err != nil {
			t.Fatal(err)
		}
		if cfg.APIClientTLS, err = certs.NodeClientTLS([]string{f(certs.CAFile)}, cfg.PeerTLS.Certificates); err != nil {
			t.Fatal(err)
		}
	})
	leader := c.WaitLeader()
	follower := c.Follower(leader)
	for i := range c.Nodes {
		if u := c.URL(i); !strings.HasPrefix(u, "https://") {
			t.Fatalf("node %d advertises %s", i, u)
		}
	}
	// A plain request is answered 400 bad_request in JSON
	// (httpapi.EarlyAnswers), and not served.
	plain := "http://" + strings.TrimPrefix(c.URL(follower), "https://") + "/v1/cluster"
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(plain)
	if err != nil {
		t.Fatalf("plain HTTP: %v", err)
	}
	var perr api.Error
	derr := json.NewDecoder(resp.Body).Decode(&perr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || derr != nil ||
		perr.Code != api.CodeBadRequest || !strings.Contains(perr.Message, "use an https:// URL") {
		t.Fatalf("plain HTTP answered %s %q %+v (%v), want 400 bad_request in JSON", resp.Status, resp.Header.Get("Content-Type"), perr, derr)
	}

	clientTLS, err := certs.ClientTLS(f(certs.CAFile), "", "")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	post := func(url, body string, out any) http.Header {
		t.Helper()
		resp, err := hc.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %s", url, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
		return resp.Header
	}
	var s api.Session
	hdr := post(c.URL(follower)+"/v1/sessions", `{"ttl":"10s"}`, &s)
	if got := hdr.Get(api.HeaderLeader); got != c.URL(leader) {
		t.Fatalf("X-Lockd-Leader through the follower = %q, want %q", got, c.URL(leader))
	}
	var a api.AcquireResponse
	post(c.URL(follower)+"/v1/locks/tls/a/acquire", `{"session":"`+s.ID+`"}`, &a)
	if a.Token == 0 {
		t.Fatalf("acquire through the follower: %+v", a)
	}
	resp, err = hc.Get(c.URL(leader) + "/v1/locks/tls/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.TLS == nil {
		t.Fatal("the leader answered without TLS")
	}
}
