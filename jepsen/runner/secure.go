package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/test/proccluster"
)

// adminAccess is how the run's own checks reach cluster c: its client
// TLS and its admin token, both empty on a plain cluster.
func adminAccess(c *proccluster.Cluster) traffic.Access {
	return traffic.Access{TLS: c.ClientTLS(), Token: c.AdminToken()}
}

// checkSecured makes sure that every node of a secured cluster refuses
// what it must, before the workloads start: plain HTTP, HTTPS without a
// client certificate, and a request with the client certificate but no
// token (401). It returns a note for the timeline, or an error naming
// what a node served.
func checkSecured(ctx context.Context, c *proccluster.Cluster) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ct := c.ClientTLS()
	if ct == nil || c.AdminToken() == "" {
		return "", fmt.Errorf("runner: the secured cluster has no TLS or no ACLs")
	}
	noCert := ct.Clone()
	noCert.Certificates = nil
	get := func(tc *tls.Config, url string) (int, error) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc.Clone() // net/http writes into it; tc is shared
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 3 * time.Second}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, n := range c.Nodes {
		if !strings.HasPrefix(n.HTTP, "https://") {
			return "", fmt.Errorf("runner: %s serves %s, not HTTPS", n.ID, n.HTTP)
		}
		plain := "http://" + strings.TrimPrefix(n.HTTP, "https://") + "/v1/cluster"
		if code, err := get(nil, plain); err == nil && code/100 == 2 {
			return "", fmt.Errorf("runner: %s answered plain HTTP with %d", n.ID, code)
		}
		if code, err := get(noCert, n.HTTP+"/v1/cluster"); err == nil {
			return "", fmt.Errorf("runner: %s answered HTTPS without a client certificate with %d", n.ID, code)
		}
		if code, err := get(ct, n.HTTP+"/v1/cluster"); err != nil || code != http.StatusUnauthorized {
			return "", fmt.Errorf("runner: %s answered a request without a token with %d (%v), want 401", n.ID, code, err) //nolint:errorlint // err is nil when only the status is wrong; %w would print that as %!w(<nil>)
		}
	}
	return "secured: every node refuses plain HTTP, HTTPS without a client certificate, and requests without a token (401); " +
		"nodes speak mutual TLS to each other; every client speaks TLS with a token", nil
}
