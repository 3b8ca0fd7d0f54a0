package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
)

// TestClient_BareEndpointIsHTTPSWithTLS: with Config.TLS, a host:port
// endpoint is reached over HTTPS, verified against the given CA.
func TestClient_BareEndpointIsHTTPSWithTLS(t *testing.T) {
	ts, pool := clusterTLSServer(t)
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

// TestClient_SharedTLSConfigLeftAlone: clients made from one tls.Config
// (as a program with several clients of one cluster does) use it side by
// side without touching it: net/http writes the protocols it offers into
// its transport's TLS config on first use, which on a shared config is a
// data race (go test -race) and changes the caller's value.
func TestClient_SharedTLSConfigLeftAlone(t *testing.T) {
	ts, pool := clusterTLSServer(t)
	shared := &tls.Config{RootCAs: pool}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		cl, err := client.NewWithConfig(client.Config{Endpoints: []string{ts.URL}, TLS: shared})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if _, err := cl.Cluster(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if shared.NextProtos != nil {
		t.Fatalf("the caller's TLS config was changed: NextProtos %q", shared.NextProtos)
	}
}

// clusterTLSServer starts an HTTPS server that answers every request with
// a node's cluster status, and returns it with a pool that trusts it.
func clusterTLSServer(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"mode":"raft","node_id":"n1","members":[]}`))
	}))
	t.Cleanup(ts.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	return ts, pool
}
