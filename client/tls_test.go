package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
)

// TestClient_BareEndpointIsHTTPSWithTLS: with Config.TLS, a host:port
// endpoint is reached over HTTPS, verified against the given CA.
func TestClient_BareEndpointIsHTTPSWithTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"mode":"raft","node_id":"n1","members":[]}`))
	}))
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	hostPort := strings.TrimPrefix(ts.URL, "https://")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	cl, err := client.NewWithConfig(client.Config{Endpoints: []string{hostPort}, TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := cl.Cluster(ctx); err != nil || st.NodeID != "n1" {
		t.Fatalf("over HTTPS: %+v, %v", st, err)
	}
	plain, err := client.NewWithConfig(client.Config{Endpoints: []string{hostPort}, RequestTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if _, err := plain.Cluster(pctx); err == nil {
		t.Fatal("a bare endpoint without TLS reached an HTTPS server")
	}
}
