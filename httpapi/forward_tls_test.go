package httpapi

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/lockd/lockd/internal/certs"
)

// TestForward_ToHTTPSLeader checks that a follower reaches a leader that
// advertises an https:// address over HTTPS, verifying the leader's
// certificate and presenting its own when the leader asks for one, with
// the transport NewForwardTransport builds from the node's TLS settings;
// and that without the cluster's CA it reaches nobody.
func TestForward_ToHTTPSLeader(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Init(dir, []string{"n1", "n2"}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	serverTLS, err := certs.ServerTLS(f("n1.pem"), f("n1-key.pem"), f(certs.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	leader := newLeaderFake()
	lts := httptest.NewUnstartedServer(New(testConfig(t, leader)))
	lts.TLS = serverTLS
	lts.StartTLS()
	t.Cleanup(lts.Close)

	for _, tc := range []struct {
		name       string
		cert, key  string
		ca         string
		wantStatus int
	}{
		{"node certificate", f("n2.pem"), f("n2-key.pem"), f(certs.CAFile), 200},
		// With TLS 1.3 the follower learns that the leader refused its
		// (absent) certificate only after its handshake ended, as if the
		// request had been sent: 504, outcome unknown.
		{"no client certificate", "", "", f(certs.CAFile), 504},
		{"no CA", f("n2.pem"), f("n2-key.pem"), "", 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientTLS, err := certs.ClientTLS(tc.ca, tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			follower := &fakeService{leaderHTTP: lts.URL}
			cfg := testConfig(t, follower)
			cfg.ForwardClient = &http.Client{Transport: NewForwardTransport(clientTLS)}
			fts := httptest.NewServer(New(cfg))
			t.Cleanup(fts.Close)
			before := len(leader.Calls())
			status, _, body := do(t, "POST", fts.URL+"/v1/locks/a/acquire", `{"session":"s1"}`, nil)
			if status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tc.wantStatus, body)
			}
			if got := len(leader.Calls()) - before; (got == 1) != (tc.wantStatus == 200) {
				t.Fatalf("the leader served %d requests", got)
			}
		})
	}
}
